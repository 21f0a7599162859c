# deep500_library(NAME SOURCES ... DEPS ...): one shared library per layer,
# with the project root as include root ("deep/tensor.h") and warnings on.
# Shared, so that a plugin loaded at run time (frameworks/libtorch) links the
# same registries as the program that loads it. Each is installed and
# exported as deep500::<NAME without the deep500_ prefix> (cmake/Install.cmake).
function(deep500_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} SHARED ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                            $<INSTALL_INTERFACE:${DEEP500_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  # nvcc (a backend's .cu files) takes host compiler warnings through -Xcompiler.
  target_compile_options(${name} PRIVATE
    "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wno-unused-parameter;-fno-semantic-interposition>"
    "$<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>"
    "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter,-fno-semantic-interposition>")
  string(REPLACE "deep500_" "" export_name ${name})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON EXPORT_NAME ${export_name})
  # Every symbol a layer uses must come from a library it links: a wrong
  # arrow (a call upward, or into a backend it does not depend on) fails here.
  target_link_options(${name} PRIVATE ${DEEP500_NO_UNDEFINED})
  install(TARGETS ${name} EXPORT deep500Targets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()
