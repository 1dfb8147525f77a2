# ctest scheduling hints: the costs of the longest gtest cases (tests/long_tests.cmake), so that `ctest -j` starts them
# first. A fresh build has no cost data (Testing/Temporary/CTestCostData.txt), so ctest starts tests in the order they
# were listed, and one that starts last can keep a core busy alone for most of a minute. ctest reads this file after
# the list gtest_discover_tests made (tests/CMakeLists.txt); a name no longer there is ignored. The script tests
# (plan.golden_plans_unchanged, ...) and the shards have their COST where they are added.
include(${CMAKE_CURRENT_LIST_DIR}/long_tests.cmake)
list(LENGTH TILEFORGE_LONG_TEST_COSTS n)
math(EXPR last "${n} - 1")
foreach(i RANGE 0 ${last} 2)
  math(EXPR j "${i} + 1")
  list(GET TILEFORGE_LONG_TEST_COSTS ${i} name)
  list(GET TILEFORGE_LONG_TEST_COSTS ${j} cost)
  set_tests_properties(${name} PROPERTIES COST ${cost})
endforeach()
