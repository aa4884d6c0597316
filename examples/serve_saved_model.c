/* Serves a SavedModel from C, through the C API's shared library only: loads the directory
 * (tag "serve"), reads rows of numbers from standard input, one example per line, and prints
 * each row's outputs of the signature.
 *
 *   serve_saved_model DIR INPUT_KEY OUTPUT_KEY [SIGNATURE] < rows.txt
 *
 * Every row must have as many numbers as the first; the input is float32 [1, n]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/c_api.h"

enum { kMaxValues = 4096 };

static int Fail(tessera_status* s) {
  fprintf(stderr, "serve_saved_model: %s\n", tessera_status_message(s));
  return 1;
}

/* The numbers of one line, at most kMaxValues; -1 at the end of input. */
static int ReadRow(float* values) {
  char line[65536];
  if (fgets(line, sizeof line, stdin) == NULL) return -1;
  int n = 0;
  for (char* p = strtok(line, " \t\r\n,"); p != NULL && n < kMaxValues; p = strtok(NULL, " \t\r\n,")) {
    values[n++] = strtof(p, NULL);
  }
  return n;
}

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    fprintf(stderr, "usage: serve_saved_model DIR INPUT_KEY OUTPUT_KEY [SIGNATURE] < rows.txt\n");
    return 2;
  }
  const char* signature = argc == 5 ? argv[4] : "serving_default";
  tessera_status* s = tessera_status_new();
  tessera_saved_model* model = tessera_saved_model_load(argv[1], NULL, 0, NULL, s);
  if (model == NULL) return Fail(s);
  float values[kMaxValues];
  int width = -1, n, status = 0;
  while ((n = ReadRow(values)) >= 0) {
    if (n == 0) continue;
    if (width < 0) width = n;
    if (n != width) {
      fprintf(stderr, "serve_saved_model: a row of %d numbers after rows of %d\n", n, width);
      status = 1;
      break;
    }
    const int64_t dims[2] = {1, n};
    tessera_tensor* input = tessera_tensor_new(TESSERA_FLOAT, dims, 2, s);
    if (input == NULL) {
      status = Fail(s);
      break;
    }
    memcpy(tessera_tensor_data(input), values, sizeof(float) * (size_t)n);
    const char* in_key = argv[2];
    const char* out_key = argv[3];
    tessera_tensor* output = NULL;
    tessera_saved_model_run(model, signature, &in_key, &input, 1, &out_key, &output, 1, s);
    tessera_tensor_delete(input);
    if (tessera_status_code(s) != TESSERA_OK || tessera_tensor_dtype(output) != TESSERA_FLOAT) {
      status = tessera_status_code(s) != TESSERA_OK ? Fail(s) : 1;
      tessera_tensor_delete(output);
      break;
    }
    const float* out = (const float*)tessera_tensor_data(output);
    for (int64_t i = 0; i < tessera_tensor_num_elements(output); ++i) printf(i == 0 ? "%g" : " %g", out[i]);
    printf("\n");
    tessera_tensor_delete(output);
  }
  tessera_saved_model_delete(model);
  tessera_status_delete(s);
  return status;
}
