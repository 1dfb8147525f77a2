# ctest scheduling hints: the run times of the longest gtest cases, so that `ctest -j` starts them first.
# A fresh build has no cost data (Testing/Temporary/CTestCostData.txt), so ctest starts tests in the order they were
# listed, and one that starts last can keep a core busy alone for most of a minute. ctest reads this file after the
# list gtest_discover_tests made (tests/CMakeLists.txt); a name no longer there is ignored. Seconds on a 2-core
# machine with nothing else running: only their order matters, so a rough figure is enough. The script tests
# (plan.golden_plans_unchanged, ...) have their COST where they are added.
set_tests_properties(BestOnly.ChoosesAsAFullPlanOnRandomGpuShapes PROPERTIES COST 49)
set_tests_properties(Sm90Family.SpaceOnHopperProfilesFitsTheirLimits PROPERTIES COST 38)
set_tests_properties(TritonCompile.PlannedConfigsFitEveryTargetAsModelled PROPERTIES COST 30)
set_tests_properties(Sm90Family.NvrtcBuildsRepresentativeConfigsForSm90a PROPERTIES COST 27)
set_tests_properties(Sm90Family.ProblemAndChipRecordShapeTheSpace PROPERTIES COST 18)
set_tests_properties(PickOnly.RanksRandomH200ShapesAsAFullPlanDoes PROPERTIES COST 17)
set_tests_properties(BestOnly.ChoosesAsAFullPlanOnPinnedShapes PROPERTIES COST 15)
set_tests_properties(PickOnly.DispatchsWalkFindsTheCandidatesOfAFullPlan PROPERTIES COST 13)
set_tests_properties(BestOnly.CostBoundNeverExceedsAPriceItBounds PROPERTIES COST 9)
set_tests_properties(DispatchSm80.PlannersFirstChoiceWhenPredictedFaster PROPERTIES COST 9)
set_tests_properties(TuneCompile.Sm80CandidatesCompileInParallelIntoAScratchCache PROPERTIES COST 8)
set_tests_properties(PlanCommand.JsonForEveryShapeAndLayout PROPERTIES COST 7)
set_tests_properties(SkinnyFamily.NvrtcBuildsEveryWarpCountWithoutSpillsForSm80AndSm90a PROPERTIES COST 6)
set_tests_properties(Sm90Family.SupportsNamesWhatItRefusesAndThePlannerFallsBackToSm80 PROPERTIES COST 6)
set_tests_properties(BestOnly.ChoosesAsAFullPlanWithPins PROPERTIES COST 5)
set_tests_properties(TritonFamily.HeuristicAndPlanAreLegalOnEveryTarget PROPERTIES COST 6)
set_tests_properties(BankConflicts.Sm80EveryShapeIsConflictFree PROPERTIES COST 5)
set_tests_properties(Sm90CostModel.PlansExplainUnderTheFourLayersOnBothHopperProfiles PROPERTIES COST 4)
set_tests_properties(PlanCommand.SummaryAndExplain PROPERTIES COST 3)
# Long tests that had no cost (2026-12-04, seconds in a 2-core ctest -j2): NVRTC compiles of sm80 tiles (with an empty
# kernel cache; under a second once it holds them), and walks of the sm90 space's ~10 M combinations since clusters of
# 4 and 8 (two full plans of 1000^3 f16 on the H200; an enumeration of that space).
set_tests_properties(Sm80Family.NvrtcBuildsBlockK64PipelinedTilesWithoutSpills PROPERTIES COST 23)
set_tests_properties(CliSharedOptions.PlanPrintsTheAnalysisChoiceRunnerUpAndBindingLimit PROPERTIES COST 11)
set_tests_properties(Sm90Family.ClustersAboveTwoOnlyForRowsOffSectorsOnGridsOfOneWave PROPERTIES COST 10)
set_tests_properties(Sm80Family.NvrtcBuildsStayWithinTheirEstimates PROPERTIES COST 7)
