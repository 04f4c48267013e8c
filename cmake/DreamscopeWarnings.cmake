# Warning and sanitizer flags shared by every dreamscope target.
# Designated initializers that leave fields at their defaults are how records are written
# here, so -Wmissing-field-initializers (part of -Wextra) is turned off.
add_library(dreamscope_build_flags INTERFACE)
target_compile_options(dreamscope_build_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wno-missing-field-initializers>
  $<$<AND:$<COMPILE_LANGUAGE:CXX,C>,$<BOOL:${DREAMSCOPE_WERROR}>>:-Werror>)
# GCC 12 at -O3 reports -Wrestrict on std::string concatenation inside libstdc++ itself
# (GCC bug 105651, fixed in 13): every `"x" + std::to_string(n)` would fail a Release build
# with -Werror.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(dreamscope_build_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()
# RelWithDebInfo (the release tree) keeps line tables only: enough for perf, backtraces and
# sanitizer reports, and full debug information (-g) made every file compile a fifth slower.
# For gdb with variables, build Debug.
target_compile_options(dreamscope_build_flags INTERFACE $<$<AND:$<CONFIG:RelWithDebInfo>,$<COMPILE_LANGUAGE:CXX,C>>:-g1>)
if(DREAMSCOPE_SANITIZE)
  target_compile_options(dreamscope_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(dreamscope_build_flags INTERFACE -fsanitize=address,undefined)
endif()
if(DREAMSCOPE_FUZZ)
  # Coverage feedback for libFuzzer in every library; fuzz targets link -fsanitize=fuzzer.
  target_compile_options(dreamscope_build_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=fuzzer-no-link>)
endif()

# dreamscope_target(name): applies the project's flags to a target it defines.
function(dreamscope_target name)
  target_link_libraries(${name} PRIVATE dreamscope_build_flags)
endfunction()

# dreamscope_optimize_in_debug(name): -O1 in Debug builds for a library every test runs through.
# The sanitizer tree is Debug so that it compiles quickly, but unoptimized, the importers'
# simdjson, the graph's and the simulator's containers and Boost.Graph ran 3 to 6 times slower
# under clang's ASan and coverage than at -O1, and a what-if that takes 0.3 s in release took 30 s.
function(dreamscope_optimize_in_debug name)
  target_compile_options(${name} PRIVATE $<$<CONFIG:Debug>:-O1>)
endfunction()
