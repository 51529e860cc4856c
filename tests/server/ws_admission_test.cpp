// The admission of a WebSocket upgrade (ws_admission.h): the checks every endpoint shares, in
// their order, with an endpoint that says what its own steps answer. The engine is only there
// because the server's context holds one: the endpoint here opens nothing of it.
#include "server/ws_admission.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include "server/ws_connection.h"

namespace brisvox::server {
namespace {

namespace http = boost::beast::http;

class NullHandler final : public WsHandler {
 public:
  WsSettings settings() const override { return {}; }
  void on_open() override {}
  void on_text(std::string) override {}
  void on_binary(std::span<const std::byte>, bool) override {}
  void on_going_away() override {}
  void on_closed(std::string_view, bool) override {}
};

// An endpoint whose steps answer what the test sets, and that counts what it was asked.
class FakeEndpoint final : public WsEndpoint {
 public:
  explicit FakeEndpoint(bool stream) : stream_(stream) {}
  bool counts_as_stream() const override { return stream_; }
  std::optional<Refusal> parse(const Request&) override {
    ++parsed;
    return parse_refusal;
  }
  std::variant<std::unique_ptr<WsHandler>, Refusal> open(const boost::asio::any_io_executor&,
                                                         std::function<void()> wake) override {
    ++opened;
    on_events = std::move(wake);
    if (open_refusal) return *open_refusal;
    return std::make_unique<NullHandler>();
  }

  std::optional<Refusal> parse_refusal;
  std::optional<Refusal> open_refusal;
  int parsed = 0;
  int opened = 0;
  std::function<void()> on_events;

 private:
  bool stream_;
};

class WsAdmissionTest : public ::testing::Test {
 protected:
  WsAdmissionTest() : engine_(engine_config()), strand_(boost::asio::make_strand(io_)) {}

  static EngineConfig engine_config() {
    EngineConfig ec;
    ec.models[0].num_workers = 1;
    return ec;
  }

  // A context made with `config` (made anew: the context keeps a reference to it).
  ServerContext& context(ServerConfig config = {}) {
    config_ = std::move(config);
    ctx_.emplace(config_, engine_, jobs_);
    return *ctx_;
  }

  Admission admit(FakeEndpoint& endpoint, const std::string& client = "10.0.0.1", const char* target = "/v1/x") {
    Request req{http::verb::get, target, 11};
    return admit_upgrade(*ctx_, req, endpoint, strand_, client);
  }

  static std::string code_of(const Response& res) {
    return nlohmann::json::parse(res.body())["error"]["code"].get<std::string>();
  }

  Engine engine_;
  boost::asio::thread_pool jobs_{1};
  boost::asio::io_context io_;
  boost::asio::any_io_executor strand_;
  ServerConfig config_;
  std::optional<ServerContext> ctx_;
};

TEST_F(WsAdmissionTest, AcceptedComesWithItsHandlerAndWakeup) {
  context();
  FakeEndpoint endpoint(/*stream=*/true);
  Admission a = admit(endpoint);
  ASSERT_FALSE(a.refusal);
  EXPECT_TRUE(a.handler);
  ASSERT_TRUE(a.wakeup);
  EXPECT_TRUE(endpoint.on_events);  // the engine side's on_events notifies the wake-up
  EXPECT_EQ(ctx_->streams_open.load(), 1);
  a.held.clear();
  EXPECT_EQ(ctx_->streams_open.load(), 0);  // the slot goes with the last holder
}

TEST_F(WsAdmissionTest, DrainingComesFirstWithoutRetryAfter) {
  context().draining = true;
  for (bool stream : {true, false}) {
    FakeEndpoint endpoint(stream);
    Admission a = admit(endpoint);
    ASSERT_TRUE(a.refusal);
    EXPECT_EQ(a.refusal->result(), http::status::service_unavailable);
    EXPECT_EQ(code_of(*a.refusal), "shutting_down");
    EXPECT_EQ(a.refusal->count(http::field::retry_after), 0u);  // this server will not take it again
    EXPECT_EQ(endpoint.parsed, 0);
  }
  EXPECT_EQ(ctx_->metrics.streams_refused.load(), 1u);  // only the endpoint whose sessions are streams
}

TEST_F(WsAdmissionTest, TokenBeforeTheEndpointReadsAnything) {
  ServerConfig config;
  config.token = "s3cret";
  context(config);
  FakeEndpoint endpoint(true);
  Admission a = admit(endpoint);
  ASSERT_TRUE(a.refusal);
  EXPECT_EQ(a.refusal->result(), http::status::unauthorized);
  EXPECT_EQ(endpoint.parsed, 0);
  FakeEndpoint with_token(true);
  EXPECT_FALSE(admit(with_token, "10.0.0.1", "/v1/x?token=s3cret").refusal);
}

TEST_F(WsAdmissionTest, TheEndpointsRefusalsAreAnswered) {
  context();
  FakeEndpoint bad_query(true);
  bad_query.parse_refusal = Refusal{400, "bad_request", "sample_rate: not a number"};
  Admission a = admit(bad_query);
  ASSERT_TRUE(a.refusal);
  EXPECT_EQ(a.refusal->result(), http::status::bad_request);
  EXPECT_EQ(code_of(*a.refusal), "bad_request");
  EXPECT_EQ(bad_query.opened, 0);

  FakeEndpoint full_engine(true);
  full_engine.open_refusal = Refusal{503, "overloaded", "engine at capacity"};
  a = admit(full_engine);
  ASSERT_TRUE(a.refusal);
  EXPECT_EQ(code_of(*a.refusal), "overloaded");
  EXPECT_EQ(a.refusal->at(http::field::retry_after), "1");
  EXPECT_FALSE(a.wakeup);
  EXPECT_EQ(ctx_->streams_open.load(), 0);  // the slot taken for it was given back
}

TEST_F(WsAdmissionTest, StreamLimitsApplyToStreamsOnly) {
  ServerConfig config;
  config.limits.max_streams = 1;
  context(config);
  FakeEndpoint first(true);
  Admission held = admit(first);
  ASSERT_FALSE(held.refusal);
  FakeEndpoint second(true);
  Admission a = admit(second);
  ASSERT_TRUE(a.refusal);
  EXPECT_EQ(a.refusal->result(), http::status::service_unavailable);
  EXPECT_EQ(code_of(*a.refusal), "too_many_streams");
  EXPECT_EQ(a.refusal->at(http::field::retry_after), "1");
  EXPECT_EQ(second.opened, 0);
  FakeEndpoint speech(/*stream=*/false);  // bounded by its own sessions, not max_streams
  EXPECT_FALSE(admit(speech).refusal);
  held = Admission{};
  FakeEndpoint third(true);
  EXPECT_FALSE(admit(third).refusal);
}

TEST_F(WsAdmissionTest, StreamsPerClient) {
  ServerConfig config;
  config.limits.max_streams_per_client = 1;
  context(config);
  FakeEndpoint first(true);
  Admission held = admit(first, "10.0.0.1");
  ASSERT_FALSE(held.refusal);
  FakeEndpoint same(true);
  Admission a = admit(same, "10.0.0.1");
  ASSERT_TRUE(a.refusal);
  EXPECT_EQ(code_of(*a.refusal), "too_many_streams");
  FakeEndpoint other(true);
  EXPECT_FALSE(admit(other, "10.0.0.2").refusal);
}

}  // namespace
}  // namespace brisvox::server
