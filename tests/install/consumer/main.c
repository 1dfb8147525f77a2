/* Installed-package consumer in C: tfGemmEx on a 3x2x4 problem, checked against a loop. */
#include <math.h>
#include <stdio.h>

#include <tileforge/tileforge.h>

int main(void) {
  float a[12], b[8], c[6];
  for (int i = 0; i < 12; ++i) a[i] = (float)i * 0.5f;
  for (int i = 0; i < 8; ++i) b[i] = (float)(i % 3) - 1.0f;
  tfHandle_t h;
  const float alpha = 2.0f, beta = 0.0f;
  if (tfCreate(&h) != TF_STATUS_SUCCESS) return 1;
  tfStatus_t s = tfGemmEx(h, TF_ROW_MAJOR, TF_ROW_MAJOR, TF_ROW_MAJOR, 3, 2, 4, &alpha, a, TF_R_32F, 4, b, TF_R_32F, 2, &beta, c,
                          TF_R_32F, 2, TF_COMPUTE_32F);
  if (s != TF_STATUS_SUCCESS) {
    fprintf(stderr, "%s: %s\n", tfGetStatusString(s), tfGetLastErrorMessage(h));
    return 1;
  }
  tfDestroy(h);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      double want = 0;
      for (int k = 0; k < 4; ++k) want += 2.0 * a[i * 4 + k] * b[k * 2 + j];
      if (fabs(c[i * 2 + j] - want) > 1e-5) return 1;
    }
  printf("C consumer ok\n");
  return 0;
}
