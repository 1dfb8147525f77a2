// Tile orders of a persistent walk (row-major, grouped, generalized Hilbert): step s -> tile (row, column), in a
// header the host compiler also reads, so that the cost model's L2 simulation and the tests walk the same order.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TF_RASTER_HD __host__ __device__ __forceinline__
#else
#define TF_RASTER_HD inline
#endif

namespace tf {

// Row-major (group_m 1), or group_m tile rows walked column by column, then the next group.
TF_RASTER_HD void grouped_cell(int s, int rows, int cols, int group_m, int& row, int& col) {
  const int width = group_m * cols;
  const int group = s / width;
  const int first = group * group_m;
  const int in_group = rows - first < group_m ? rows - first : group_m;
  const int r = s - group * width;
  row = first + r % in_group;
  col = r / in_group;
}

// Step s of a generalized Hilbert curve over rows x cols cells (any rectangle; consecutive steps are neighbours, with
// at most one diagonal step, only where a side is odd), found top-down in O(log) steps without a table, so that every
// warpgroup can walk it: the rectangle is cut along its longer side into two parts when it is much longer than wide,
// else into three (a half-height block entered sideways, the far part, and a block back), each part a smaller
// instance with its own start corner and axes; halves are rounded so that a part's long side is even whenever the
// side is longer than 2, which is what lets each part end next to where the following one starts. The region is an
// origin (x along columns, y along rows), a major axis (ax, ay) the curve sweeps first and a minor axis (bx, by);
// exactly one component of each axis is non-zero. Halving truncates toward zero (a mirrored region halves as its
// mirror image does).
TF_RASTER_HD void hilbert_cell(int s, int rows, int cols, int& row, int& col) {
  auto sign = [](int v) { return (v > 0) - (v < 0); };
  auto mag = [](int v) { return v < 0 ? -v : v; };
  int x = 0, y = 0;
  int ax = cols >= rows ? cols : 0, ay = cols >= rows ? 0 : rows;
  int bx = cols >= rows ? 0 : cols, by = cols >= rows ? rows : 0;
  for (;;) {
    const int w = mag(ax + ay), h = mag(bx + by);
    const int dax = sign(ax), day = sign(ay), dbx = sign(bx), dby = sign(by);
    if (h == 1) {  // one line along the major axis
      x += dax * s;
      y += day * s;
      break;
    }
    if (w == 1) {  // one line along the minor axis
      x += dbx * s;
      y += dby * s;
      break;
    }
    int ax2 = ax / 2, ay2 = ay / 2, bx2 = bx / 2, by2 = by / 2;
    if (2 * w > 3 * h) {
      // Long and flat: two parts side by side along the major axis, both swept the same way.
      if ((mag(ax2 + ay2) & 1) && w > 2) {
        ax2 += dax;
        ay2 += day;
      }
      const int first = mag(ax2 + ay2) * h;
      if (s < first) {
        ax = ax2;
        ay = ay2;
      } else {
        s -= first;
        x += ax2;
        y += ay2;
        ax -= ax2;
        ay -= ay2;
      }
      continue;
    }
    // Three parts: up the minor axis over half the height, along the whole major axis, and back down.
    if ((mag(bx2 + by2) & 1) && h > 2) {
      bx2 += dbx;
      by2 += dby;
    }
    const int up = mag(bx2 + by2) * mag(ax2 + ay2);
    const int across = w * (h - mag(bx2 + by2));
    if (s < up) {
      const int tx = ax2, ty = ay2;
      ax = bx2;
      ay = by2;
      bx = tx;
      by = ty;
    } else if (s - up < across) {
      s -= up;
      x += bx2;
      y += by2;
      bx -= bx2;
      by -= by2;
    } else {
      s -= up + across;
      x += (ax - dax) + (bx2 - dbx);
      y += (ay - day) + (by2 - dby);
      const int nax = -bx2, nay = -by2, nbx = -(ax - ax2), nby = -(ay - ay2);
      ax = nax;
      ay = nay;
      bx = nbx;
      by = nby;
    }
  }
  row = y;
  col = x;
}

// The orders by number, as the kernels' kOrder and the cost model name them.
enum : int { kRasterRowMajor = 0, kRasterGrouped = 1, kRasterHilbert = 2 };

TF_RASTER_HD void raster_cell(int order, int s, int rows, int cols, int group_m, int& row, int& col) {
  if (order == kRasterHilbert) {
    hilbert_cell(s, rows, cols, row, col);
  } else {
    grouped_cell(s, rows, cols, order == kRasterGrouped ? group_m : 1, row, col);
  }
}

}  // namespace tf
