#include <gtest/gtest.h>

#include "weft/support/status.h"

namespace weft {
namespace {

TEST(Status, OkHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.to_string(), "ok");
}

TEST(Status, LocationNamesFileNodeOpAndOpset) {
  Status s = Status::error({"m.onnx", "conv_3", "Conv", 13}, "input W has rank 3, expected 4");
  EXPECT_EQ(s.to_string(),
            "error: m.onnx: node 'conv_3' (Conv, opset 13): input W has rank 3, expected 4");
}

TEST(Status, WithLocationPrefixesOnce) {
  Location where{"m.onnx", "n", "Add", 7};
  Status s = Status::error("bad").with_location(where).with_location(where);
  EXPECT_EQ(s.message(), "m.onnx: node 'n' (Add, opset 7): bad");
}

TEST(Status, KeepsItsCodeUnderALocation) {
  EXPECT_EQ(Status::error("bad").code(), StatusCode::kFail);
  Status s = Status::error("x: no such file", StatusCode::kNoSuchFile);
  EXPECT_EQ(s.with_location({"m.onnx", "n", "Add", 7}).code(), StatusCode::kNoSuchFile);
  EXPECT_EQ(Status().code(), StatusCode::kFail);
}

TEST(Status, MessagesAreOneLine) {
  Status s = Status::error("op 'A\nB\tC' is odd");
  EXPECT_EQ(s.message(), "op 'A\\x0aB\\x09C' is odd");
}

Result<int> half(int x) {
  if (x % 2) return Status::error("odd");
  return x / 2;
}

Result<int> quarter(int x) {
  WEFT_ASSIGN_OR_RETURN(int h, half(x));
  return half(h);
}

TEST(Result, PropagatesErrors) {
  EXPECT_EQ(quarter(8).value(), 2);
  EXPECT_EQ(quarter(6).status().message(), "odd");
}

} // namespace
} // namespace weft
