#!/bin/bash
# re-measure the two near-tie winners of the 1- and 2-rank tunes on one GPU, alternating
tf=build/tileforge
export TILEFORGE_CACHE_DIR=/tmp/tiecache
A1="--set BLOCK_M=64 --set BLOCK_N=128 --set CONSUMERS=1 --set GROUP_M=4 --set SPLIT_K=16 --set STAGES=8 --set CLUSTER_M=1 --set CLUSTER_N=1 --set COPY_AB=0 --set EPILOGUE=1 --set EPI_SPLIT=1 --set STMATRIX=1 --set STREAM_K=0"
A2="--set BLOCK_M=128 --set BLOCK_N=64 --set CONSUMERS=1 --set GROUP_M=8 --set SPLIT_K=16 --set STAGES=8 --set CLUSTER_M=1 --set CLUSTER_N=1 --set COPY_AB=0 --set EPILOGUE=1 --set EPI_SPLIT=1 --set STMATRIX=1 --set STREAM_K=0"
B1="--set BLOCK_M=64 --set BLOCK_N=64 --set CONSUMERS=1 --set GROUP_M=1 --set SPLIT_K=1 --set STAGES=7 --set CLUSTER_M=1 --set CLUSTER_N=1 --set COPY_AB=0 --set EPILOGUE=1 --set EPI_SPLIT=1 --set STMATRIX=1 --set STREAM_K=0"
B2="--set BLOCK_M=64 --set BLOCK_N=64 --set CONSUMERS=1 --set GROUP_M=8 --set SPLIT_K=1 --set STAGES=8 --set CLUSTER_M=1 --set CLUSTER_N=1 --set COPY_AB=0 --set EPILOGUE=1 --set EPI_SPLIT=1 --set STMATRIX=1 --set STREAM_K=0"
for round in 1 2 3; do
  for v in A1 A2; do echo "256x256x16384 $v round $round $($tf bench --device cuda --shape 256x256x16384 --dtype f16 --no-db ${!v} --format csv -q 2>/dev/null | python3 -c 'import csv,sys; r=list(csv.DictReader(sys.stdin))[0]; print(r["median_ms"])')"; done
  for v in B1 B2; do echo "512x512x512 $v round $round $($tf bench --device cuda --shape 512x512x512 --dtype f16 --no-db ${!v} --format csv -q 2>/dev/null | python3 -c 'import csv,sys; r=list(csv.DictReader(sys.stdin))[0]; print(r["median_ms"])')"; done
done
