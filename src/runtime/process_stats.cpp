#include <dirent.h>
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

}  // namespace brisvox
