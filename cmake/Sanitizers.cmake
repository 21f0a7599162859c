# Sanitizer and fuzzing builds (scripts/sanitize.sh configures them).
#   DEEP500_SANITIZE=address,undefined  ASan+UBSan on every target; any
#                                       report aborts the test that caused it
#   DEEP500_SANITIZE=thread             TSan
#   DEEP500_FUZZ=ON                     libFuzzer coverage on every target and
#                                       the harnesses of tests/fuzz (clang only)
set(DEEP500_SANITIZE "" CACHE STRING "sanitizers for every target: address,undefined or thread; empty for none")
option(DEEP500_FUZZ "libFuzzer harnesses in tests/fuzz (needs clang)" OFF)

if(DEEP500_SANITIZE)
  add_compile_options(-fsanitize=${DEEP500_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${DEEP500_SANITIZE})
endif()
if(DEEP500_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DEEP500_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
# A sanitized shared library leaves the runtime's symbols to the executable
# (clang), so the layers' --no-undefined check holds only in plain builds.
if(DEEP500_SANITIZE OR DEEP500_FUZZ)
  set(DEEP500_NO_UNDEFINED "")
else()
  set(DEEP500_NO_UNDEFINED -Wl,--no-undefined)
endif()
