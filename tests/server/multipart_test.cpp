// multipart/form-data bodies of POST /v1/vad (server/multipart.h): what curl -F and browsers send,
// and every malformed form answered with a message that says how to send it right.
#include "server/multipart.h"

#include <gtest/gtest.h>

#include <string>

#include "brisvox/error.h"

namespace brisvox::server {
namespace {

const std::string kType = "multipart/form-data; boundary=------------------------d74496d66958873e";

// As curl 7.88 writes `curl -F note=hi -F file=@a.wav`.
std::string curl_body(const std::string& audio) {
  return "--------------------------d74496d66958873e\r\n"
         "Content-Disposition: form-data; name=\"note\"\r\n\r\n"
         "hi\r\n"
         "--------------------------d74496d66958873e\r\n"
         "Content-Disposition: form-data; name=\"file\"; filename=\"a b.wav\"\r\n"
         "Content-Type: audio/x-wav\r\n\r\n" +
         audio +
         "\r\n--------------------------d74496d66958873e--\r\n";
}

std::string error_of(const std::string& body, const std::string& type) {
  try {
    form_field(body, type, "file");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "(no error)";
}

TEST(Multipart, RecognisesTheContentType) {
  EXPECT_TRUE(is_multipart_form(kType));
  EXPECT_TRUE(is_multipart_form("Multipart/Form-Data;boundary=x"));
  EXPECT_FALSE(is_multipart_form("audio/wav"));
  EXPECT_FALSE(is_multipart_form("application/x-www-form-urlencoded"));  // curl --data-binary
  EXPECT_FALSE(is_multipart_form(""));
}

TEST(Multipart, TheFileFieldAsAViewOfTheBody) {
  // Binary audio, CR LF and a delimiter-like "--" inside included.
  const std::string audio = std::string("RIFF\0\r\n--x\r\n\xff", 13);
  const std::string body = curl_body(audio);
  const FormFile f = form_field(body, kType, "file");
  EXPECT_EQ(f.data, audio);
  EXPECT_EQ(f.filename, "a b.wav");
  EXPECT_GE(f.data.data(), body.data());  // not copied
  EXPECT_LE(f.data.data() + f.data.size(), body.data() + body.size());
}

TEST(Multipart, QuotedBoundaryPreambleAndPadding) {
  const std::string body =
      "ignored preamble\r\n--a:b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n\r\n--a:b  \r\n"
      "CONTENT-DISPOSITION: form-data; name=file\r\n\r\nX\r\n--a:b--";
  EXPECT_EQ(form_field(body, "multipart/form-data; charset=utf-8; boundary=\"a:b\"", "file").data, "X");
}

TEST(Multipart, ErrorsSayWhatIsWrongAndHowToSendIt) {
  const std::string body = curl_body("RIFF");
  std::string e = error_of(body, "multipart/form-data");
  EXPECT_NE(e.find("no valid boundary"), std::string::npos) << e;
  EXPECT_NE(e.find("curl -F file=@"), std::string::npos) << e;
  e = error_of(body, "multipart/form-data; boundary=other");
  EXPECT_NE(e.find("does not contain its boundary 'other'"), std::string::npos) << e;
  const std::string long_body = curl_body(std::string(200, 'a'));
  e = error_of(long_body.substr(0, long_body.size() - 60), kType);  // inside the audio
  EXPECT_NE(e.find("cut short"), std::string::npos) << e;
  std::string renamed = body;
  renamed.replace(renamed.find("name=\"file\""), 11, "name=\"audio\"");
  e = error_of(renamed, kType);
  EXPECT_NE(e.find("no field 'file' (fields: 'note', 'audio')"), std::string::npos) << e;
  e = error_of("--b\r\nContent-Type: audio/wav\r\n\r\nX\r\n--b--", "multipart/form-data; boundary=b");
  EXPECT_NE(e.find("no Content-Disposition name"), std::string::npos) << e;
  e = error_of("--b\r\nContent-Disposition: form-data; name=file", "multipart/form-data; boundary=b");
  EXPECT_NE(e.find("headers do not end"), std::string::npos) << e;
}

// Issue 35: the error listed every field name, so a 20 MB form of names made a 20 MB error.
TEST(Multipart, TheMissingFieldErrorStaysSmallWhateverTheForm) {
  std::string body;
  for (int i = 0; i < 20000; ++i) {
    body += "--b\r\nContent-Disposition: form-data; name=\"" + std::string(500, 'n') + std::to_string(i) +
            "\"\r\n\r\nx\r\n";
  }
  body += "--b--\r\n";
  const std::string e = error_of(body, "multipart/form-data; boundary=b");
  EXPECT_LT(e.size(), 1000u) << e.substr(0, 200);
  EXPECT_NE(e.find("and 19992 more"), std::string::npos) << e;
}

}  // namespace
}  // namespace brisvox::server
