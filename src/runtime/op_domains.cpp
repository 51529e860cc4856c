#include "runtime/op_domains.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace brisvox::runtime {
namespace {

std::mutex& domains_mutex() {
  static std::mutex mu;
  return mu;
}

std::vector<Ort::CustomOpDomain*>& domains() {
  static std::vector<Ort::CustomOpDomain*> list;
  return list;
}

}  // namespace

void register_op_domain(Ort::CustomOpDomain& domain) {
  std::lock_guard lock(domains_mutex());
  if (std::find(domains().begin(), domains().end(), &domain) == domains().end()) domains().push_back(&domain);
}

void add_op_domains(Ort::SessionOptions& options) {
  std::lock_guard lock(domains_mutex());
  for (Ort::CustomOpDomain* d : domains()) options.Add(*d);
}

}  // namespace brisvox::runtime
