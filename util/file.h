// Whole-file reads shared by every component that loads an input file (JSON, JSONL, CSV, tokens,
// PEM). One reader, so that every input is bounded and every failure is named the same way:
//   NOT_FOUND          "<path>: no such file"
//   INVALID_ARGUMENT   "<path>: is a directory, not a file"
//   PERMISSION_DENIED  "<path>: cannot read: Permission denied"   (the OS's reason, strerror)
//   RESOURCE_EXHAUSTED "<path>: more than the 64 MiB (67108864 bytes) an input file may hold"
// The size is refused before the file is read whole (from fstat for a regular file; a pipe or a
// device such as /dev/zero is read up to the limit and no further).
#ifndef SPECPLAN_UTIL_FILE_H_
#define SPECPLAN_UTIL_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace specplan {

// The largest input file any reader takes whole: 64 MiB. The largest file specplan ships is
// about 1 MB (a whatif trace); a JSON value of 64 MiB parses in well under 1 GB.
inline constexpr size_t kMaxInputFileBytes = size_t{64} << 20;

// The file's bytes, or one of the errors above. `max_bytes` bounds what is read.
absl::StatusOr<std::string> ReadFileToString(const std::string& path,
                                             size_t max_bytes = kMaxInputFileBytes);

// "64 MiB (67108864 bytes)": how the limits name a byte count in their errors.
std::string DescribeBytes(size_t bytes);

}  // namespace specplan

#endif  // SPECPLAN_UTIL_FILE_H_
