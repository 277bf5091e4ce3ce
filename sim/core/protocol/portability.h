// Portability macros for code shared by host threads, the simulator and CUDA
// device code.
//
// The NVMe protocol definitions are used unchanged by the GPU-side submission
// and completion algorithms (compiled by nvcc for the hardware backend), by the
// simulated controller and by a software target. Everything here therefore has
// to be header-only and callable from both host and device code.
#pragma once

#if defined(__CUDACC__)
// Callable from host code and from CUDA device code.
#define GPUNVME_HD __host__ __device__
// Function templates marked GPUNVME_HD that call a caller-supplied functor
// (memory readers, segment sinks) would otherwise draw a warning from nvcc
// whenever they are instantiated with a host-only functor in host code. The
// pragma suppresses the execution-space check for the following template only;
// instantiating it with a host-only functor from device code is still an error.
#define GPUNVME_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define GPUNVME_HD
#define GPUNVME_EXEC_CHECK_DISABLE
#endif

// The protocol structures are laid out so that they can be copied byte for
// byte onto (simulated or real) host and GPU memory. NVMe data structures are
// little endian (NVMe Base Specification 1.4, section 1.4 "Conventions"), as
// are x86-64, AArch64 and NVIDIA GPUs; a big-endian host would need byte swaps
// that these definitions deliberately do not carry.
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gpunvme NVMe protocol definitions assume a little-endian host"
#endif
#endif
