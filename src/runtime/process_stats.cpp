#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

#include "brisvox/runtime/runtime_info.h"

namespace brisvox {

int process_thread_count() {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return 0;
  int count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

long process_rss_bytes() {
  std::FILE* file = std::fopen("/proc/self/statm", "r");
  if (file == nullptr) return 0;
  long size_pages = 0;
  long resident_pages = 0;
  const int fields = std::fscanf(file, "%ld %ld", &size_pages, &resident_pages);
  std::fclose(file);
  return fields == 2 ? resident_pages * sysconf(_SC_PAGESIZE) : 0;
}

double machine_busy_cpu_s() {
  std::FILE* file = std::fopen("/proc/stat", "r");
  if (file == nullptr) return 0.0;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  const int fields = std::fscanf(file, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle,
                                 &iowait, &irq, &softirq, &steal);
  std::fclose(file);
  if (fields != 8) return 0.0;
  return static_cast<double>(user + nice + system + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

long raise_open_file_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return -1;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return lim.rlim_cur == RLIM_INFINITY ? -1 : static_cast<long>(lim.rlim_cur);
}

}  // namespace brisvox
