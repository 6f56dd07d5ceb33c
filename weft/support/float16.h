// Conversions between f32 and the 16-bit float formats (IEEE half, bfloat16), by bit pattern.
#pragma once

#include <cstdint>

namespace weft {

float half_to_float(uint16_t bits);
uint16_t float_to_half(float value); // round to nearest even; NaN stays NaN
float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float value); // round to nearest even; NaN stays NaN

} // namespace weft
