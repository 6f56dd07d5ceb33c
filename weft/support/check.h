// Internal invariants. A failed WEFT_CHECK is a bug in Weft, never a user error: it prints
// where and why and aborts. User errors go through Status (status.h).
#pragma once

#include <cstdio>
#include <cstdlib>

#define WEFT_CHECK(cond, what)                                                                     \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "internal error: %s:%d: check failed: %s (%s)\n", __FILE__, __LINE__,   \
                   #cond, what);                                                                   \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)
