# Writes OUT, a C++ source defining the commit the tool is built from (`git describe --always --dirty` of SRC, or
# "unknown" outside a git checkout), and rewrites it only when that text changes: a build after a commit or an edit
# relinks the tool, which then names the tree it was built from; an unchanged tree rebuilds nothing. Run at every
# build by the tf_build_commit target (CMakeLists.txt), so that a build carried to another machine says what it is.
execute_process(COMMAND git -C "${SRC}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
string(CONCAT text "// Generated at build time by cmake/build_commit.cmake: the source tree the tool was built from.\n"
       "extern const char* const tileforge_build_commit;\n"
       "const char* const tileforge_build_commit = \"${commit}\";\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
