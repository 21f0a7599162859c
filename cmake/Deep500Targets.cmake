# deep500_library(NAME SOURCES ... DEPS ...): one shared library per layer,
# with the project root as include root ("deep/tensor.h") and warnings on.
# Shared, so that a plugin loaded at run time (frameworks/libtorch) links the
# same registries as the program that loads it.
function(deep500_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} SHARED ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter -Wno-restrict
                         -fno-semantic-interposition)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  # Every symbol a layer uses must come from a library it links: a wrong
  # arrow (a call upward, or into a backend it does not depend on) fails here.
  target_link_options(${name} PRIVATE -Wl,--no-undefined)
endfunction()
