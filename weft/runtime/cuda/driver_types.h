// The CUDA driver API's types that Weft's declarations use, as opaque as Weft needs them
// (the C ABI of cuda.h; no CUDA header is needed to build Weft).
#pragma once

namespace weft::runtime::cuda {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUdeviceptr = unsigned long long;

} // namespace weft::runtime::cuda
