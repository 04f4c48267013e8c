# Every third-party dependency, found once here. Debian packages: scripts/install-deps.sh.
find_package(Threads REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(ZLIB REQUIRED)
# libdeflate (Debian libdeflate-dev) inflates a whole gzip buffer 2-3x faster than zlib;
# optional: without it the importers stream through zlib.
find_path(LIBDEFLATE_INCLUDE_DIR libdeflate.h)
find_library(LIBDEFLATE_LIBRARY deflate)
find_package(fmt REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(simdjson CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(tomlplusplus CONFIG REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS graph)
# RE2: user-written name patterns match in linear time (no backtracking blow-up). Debian's
# libre2-dev ships a pkg-config file, not a CMake package.
find_package(PkgConfig REQUIRED)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
# ISA-L (Debian libisal-dev) inflates gzip as a stream about as fast as libdeflate inflates a
# whole buffer (zlib streams 3x slower): large gzipped traces are then read while inflated,
# without faulting in memory for the whole text. Optional: without it they are inflated whole.
pkg_check_modules(ISAL QUIET IMPORTED_TARGET libisal)

if(DREAMSCOPE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(DREAMSCOPE_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
if(DREAMSCOPE_BUILD_GUI)
  find_package(Qt6 COMPONENTS Widgets Charts Test Concurrent)
  if(NOT Qt6_FOUND)
    message(WARNING "Qt 6 not found: dreamscope-gui is not built (run scripts/install-deps.sh)")
    set(DREAMSCOPE_BUILD_GUI OFF)
  endif()
endif()

# The CUDA toolkit is optional: without it the tracer records NVTX and the CPU side only.
find_package(CUDAToolkit QUIET)
set(DREAMSCOPE_HAVE_CUPTI OFF)
if(CUDAToolkit_FOUND AND TARGET CUDA::cupti)
  set(DREAMSCOPE_HAVE_CUPTI ON)
  message(STATUS "dreamscope: CUDA ${CUDAToolkit_VERSION} at ${CUDAToolkit_TARGET_DIR}: tracer records CUPTI activity")
else()
  message(STATUS "dreamscope: no CUDA toolkit with CUPTI found: the tracer is built CPU-only (NVTX, annotations)")
endif()
# NVTX v3 is header-only; it ships with the CUDA toolkit, and we need only its headers.
find_path(DREAMSCOPE_NVTX3_INCLUDE_DIR nvtx3/nvToolsExt.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include /usr/include)
if(NOT DREAMSCOPE_NVTX3_INCLUDE_DIR)
  message(STATUS "dreamscope: NVTX v3 headers not found: annotations use the bundled fallback")
endif()
