// The persistent walk's tile orders (kernels/common/raster.cuh) on the host: every order visits each tile of every
// grid exactly once, the Hilbert walk moves to a neighbouring tile at each step (at most one diagonal step, only where
// a side is odd), and it keeps a wave of tiles more compact than a row-major walk does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <utility>
#include <vector>

#include "backends/cuda/kernels/common/raster.cuh"

namespace {

std::vector<std::pair<int, int>> walk(int order, int rows, int cols, int group_m) {
  std::vector<std::pair<int, int>> cells;
  for (int s = 0; s < rows * cols; ++s) {
    int r = -1, c = -1;
    tf::raster_cell(order, s, rows, cols, group_m, r, c);
    cells.emplace_back(r, c);
  }
  return cells;
}

TEST(Raster, EveryOrderVisitsEachTileOnce) {
  for (int order : {tf::kRasterRowMajor, tf::kRasterGrouped, tf::kRasterHilbert}) {
    for (int rows = 1; rows <= 40; ++rows) {
      for (int cols = 1; cols <= 40; ++cols) {
        const auto cells = walk(order, rows, cols, 8);
        std::set<std::pair<int, int>> seen;
        for (auto [r, c] : cells) {
          ASSERT_TRUE(r >= 0 && r < rows && c >= 0 && c < cols)
              << "order " << order << " " << rows << "x" << cols << ": (" << r << ", " << c << ") outside";
          ASSERT_TRUE(seen.insert({r, c}).second) << "order " << order << " " << rows << "x" << cols << ": (" << r
                                                   << ", " << c << ") twice";
        }
        EXPECT_EQ(seen.size(), std::size_t(rows) * std::size_t(cols));
      }
    }
  }
}

TEST(Raster, HilbertStepsGoToANeighbour) {
  // Grids of tiles as the public suite and larger shapes give them, and every small one.
  std::vector<std::pair<int, int>> grids = {{32, 16}, {16, 32}, {40, 20}, {64, 32}, {128, 64}, {24, 16}, {47, 73},
                                            {128, 128}, {3, 200}, {200, 3}};
  for (int rows = 1; rows <= 48; ++rows) {
    for (int cols = 1; cols <= 48; ++cols) grids.emplace_back(rows, cols);
  }
  for (auto [rows, cols] : grids) {
    const auto cells = walk(tf::kRasterHilbert, rows, cols, 1);
    int diagonal = 0;
    for (std::size_t i = 1; i < cells.size(); ++i) {
      const int dr = std::abs(cells[i].first - cells[i - 1].first), dc = std::abs(cells[i].second - cells[i - 1].second);
      ASSERT_LE(std::max(dr, dc), 1) << rows << "x" << cols << ": a jump at step " << i;
      if (dr + dc == 2) ++diagonal;
    }
    EXPECT_LE(diagonal, 1) << rows << "x" << cols;
    if (rows % 2 == 0 && cols % 2 == 0) {
      EXPECT_EQ(diagonal, 0) << rows << "x" << cols;
    }
  }
}

TEST(Raster, HilbertWavesTouchFewerPanelsThanRowMajor) {
  // 132 consecutive tiles (one wave of an H200's persistent grid) on 64 x 64 tiles: the rows and columns of tiles
  // they touch are the panels of A and B a wave reads.
  const int rows = 64, cols = 64, wave = 132;
  auto panels = [&](int order, int group_m) {
    const auto cells = walk(order, rows, cols, group_m);
    int worst = 0;
    for (std::size_t first = 0; first + wave <= cells.size(); first += wave) {
      std::set<int> r, c;
      for (std::size_t i = first; i < first + wave; ++i) {
        r.insert(cells[i].first);
        c.insert(cells[i].second);
      }
      worst = std::max(worst, int(r.size() + c.size()));
    }
    return worst;
  };
  const int row_major = panels(tf::kRasterRowMajor, 1), hilbert = panels(tf::kRasterHilbert, 1);
  EXPECT_LT(hilbert, row_major / 2) << "hilbert " << hilbert << " row-major " << row_major;
  EXPECT_LE(hilbert, panels(tf::kRasterGrouped, 8) + 8);
}

}  // namespace
