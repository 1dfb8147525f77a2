# The longest GoogleTest cases and their run times (seconds on a 2-core machine with nothing else running: only
# their order matters, so a rough figure is enough), as NAME COST pairs. tests/CMakeLists.txt gives each its own
# ctest entry (the other cases run in shards) and test_costs.cmake its COST, so that `ctest -j` starts them first.
# Long tests that had no cost (2026-12-04, seconds in a 2-core ctest -j2) include NVRTC compiles of sm80 tiles (with
# an empty kernel cache; under a second once it holds them) and walks of the sm90 space's ~10 M combinations since
# clusters of 4 and 8 (two full plans of 1000^3 f16 on the H200; an enumeration of that space).
set(TILEFORGE_LONG_TEST_COSTS
  BestOnly.ChoosesAsAFullPlanOnRandomGpuShapes 17
  Sm90Family.SpaceOnHopperProfilesFitsTheirLimits 9
  TritonCompile.PlannedConfigsFitEveryTargetAsModelled 30
  Sm90Family.NvrtcBuildsRepresentativeConfigsForSm90a 27
  Sm90Family.ProblemAndChipRecordShapeTheSpace 6
  PickOnly.RanksRandomH200ShapesAsAFullPlanDoes 14
  BestOnly.ChoosesAsAFullPlanOnPinnedShapes 15
  PickOnly.DispatchsWalkFindsTheCandidatesOfAFullPlan 12
  BestOnly.CostBoundNeverExceedsAPriceItBounds 9
  DispatchSm80.PlannersFirstChoiceWhenPredictedFaster 9
  TuneCompile.Sm80CandidatesCompileInParallelIntoAScratchCache 8
  PlanCommand.JsonForEveryShapeAndLayout 7
  SkinnyFamily.NvrtcBuildsEveryWarpCountWithoutSpillsForSm80AndSm90a 6
  Sm90Family.SupportsNamesWhatItRefusesAndThePlannerFallsBackToSm80 6
  BestOnly.ChoosesAsAFullPlanWithPins 5
  TritonFamily.HeuristicAndPlanAreLegalOnEveryTarget 6
  BankConflicts.Sm80EveryShapeIsConflictFree 5
  Sm90CostModel.PlansExplainUnderTheFourLayersOnBothHopperProfiles 4
  PlanCommand.SummaryAndExplain 3
  Sm80Family.NvrtcBuildsBlockK64PipelinedTilesWithoutSpills 23
  CliSharedOptions.PlanPrintsTheAnalysisChoiceRunnerUpAndBindingLimit 11
  Sm90Family.ClustersAboveTwoOnlyForRowsOffSectorsOnGridsOfOneWave 6
  Sm80Family.NvrtcBuildsStayWithinTheirEstimates 7
)
