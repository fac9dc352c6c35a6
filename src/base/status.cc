#include "quantpath/base.h"

namespace quantpath {

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

Status InvalidInput(std::string message) { return {ErrorCode::kInvalidInput, std::move(message)}; }
Status NotFound(std::string message) { return {ErrorCode::kNotFound, std::move(message)}; }
Status Unsupported(std::string message) { return {ErrorCode::kUnsupported, std::move(message)}; }
Status IoError(std::string message) { return {ErrorCode::kIo, std::move(message)}; }
Status LimitError(std::string message) { return {ErrorCode::kLimit, std::move(message)}; }
Status InternalError(std::string message) { return {ErrorCode::kInternal, std::move(message)}; }

}  // namespace quantpath
