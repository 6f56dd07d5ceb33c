// Test helpers: models written in ONNX's textual syntax, imported as from a file.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft::testing {

// The serialized ModelProto of "text" (ONNX textual syntax). Fails the test on a parse error.
std::string model_bytes(const std::string& text);

// Imports "text" through the real importer (check, shape inference, graph building).
Result<Graph> import_text(const std::string& text);

// Like import_text, but fails the test on an error.
Graph graph_from_text(const std::string& text);

// The printed graph without its header line, for compact expectations.
std::string print_body(const Graph& graph);

// How many nodes of "op" a print_body text holds.
int count_ops(const std::string& body, const std::string& op);
// How many nodes of "op" "graph" holds.
int count_ops(const Graph& graph, Op op);

} // namespace weft::testing

#define ASSERT_OK(expr)                                                                            \
  do {                                                                                             \
    ::weft::Status weft_test_status_ = (expr);                                                     \
    ASSERT_TRUE(weft_test_status_.ok()) << weft_test_status_.to_string();                          \
  } while (0)
