// The translation unit that builds the test executables' precompiled header
// (tests/CMakeLists.txt: deep500_test_headers); it has no code of its own.
