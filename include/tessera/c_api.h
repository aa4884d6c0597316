/* Tessera's C API: load a graph (Tessera's JSON or TensorFlow's GraphDef), open a session on
 * it and run steps, from C or any language that calls C.
 *
 *   tessera_status* s = tessera_status_new();
 *   tessera_graph* g = tessera_graph_import_graphdef(bytes, size, s);
 *   tessera_session* session = tessera_session_new(g, NULL, s);
 *   const char* feeds[] = {"images"}; const char* fetches[] = {"logits"};
 *   tessera_tensor* out[1];
 *   tessera_session_run(session, feeds, &images, 1, fetches, out, 1, NULL, 0, s);
 *   if (tessera_status_code(s) != TESSERA_OK) puts(tessera_status_message(s));
 *
 * Conventions. Every handle is opaque and is freed by its own _delete function (NULL is
 * accepted and ignored). A function that can fail takes a tessera_status* last and sets it:
 * TESSERA_OK, or a code and a message naming the node, op and device involved; it returns
 * NULL (or 0) on failure. A NULL handle or argument where one is needed is
 * TESSERA_INVALID_ARGUMENT, never a crash. No C++ exception crosses this API. Strings are
 * NUL-terminated UTF-8 unless a length is given.
 *
 * Thread safety. A tessera_status belongs to one thread at a time. Graphs are immutable:
 * any number of threads may read one and create sessions from it. tessera_session_run may
 * be called concurrently on one session; tessera_session_close and _delete must not race
 * with a run. A tensor may be read by any number of threads; writing its data or strings
 * must not race with anything else using it. tessera_set_log_sink may be called at any time;
 * the sink is called from the threads that log, concurrently.
 *
 * Symbols: the shared library exports only the tessera_ functions below, versioned
 * TESSERA_C_1, so that two copies of the engine in one process cannot bind to each other. */
#ifndef TESSERA_C_API_H_
#define TESSERA_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TESSERA_EXPORT __attribute__((visibility("default")))

/* TensorFlow's error codes, with its numbers. */
typedef enum tessera_code {
  TESSERA_OK = 0,
  TESSERA_CANCELLED = 1,
  TESSERA_UNKNOWN = 2,
  TESSERA_INVALID_ARGUMENT = 3,
  TESSERA_DEADLINE_EXCEEDED = 4,
  TESSERA_NOT_FOUND = 5,
  TESSERA_ALREADY_EXISTS = 6,
  TESSERA_PERMISSION_DENIED = 7,
  TESSERA_RESOURCE_EXHAUSTED = 8,
  TESSERA_FAILED_PRECONDITION = 9,
  TESSERA_ABORTED = 10,
  TESSERA_OUT_OF_RANGE = 11,
  TESSERA_UNIMPLEMENTED = 12,
  TESSERA_INTERNAL = 13,
  TESSERA_UNAVAILABLE = 14,
  TESSERA_DATA_LOSS = 15,
  TESSERA_UNAUTHENTICATED = 16
} tessera_code;

/* Element types, with TensorFlow's DataType numbers. */
typedef enum tessera_dtype {
  TESSERA_FLOAT = 1,
  TESSERA_DOUBLE = 2,
  TESSERA_INT32 = 3,
  TESSERA_UINT8 = 4,
  TESSERA_STRING = 7,
  TESSERA_INT64 = 9,
  TESSERA_BOOL = 10,
  TESSERA_BFLOAT16 = 14,
  TESSERA_HALF = 19
} tessera_dtype;

typedef struct tessera_status tessera_status;
typedef struct tessera_tensor tessera_tensor;
typedef struct tessera_graph tessera_graph;
typedef struct tessera_session tessera_session;
typedef struct tessera_saved_model tessera_saved_model;

/* "0.1.0". */
TESSERA_EXPORT const char* tessera_version(void);

/* ---- status ---- */
TESSERA_EXPORT tessera_status* tessera_status_new(void);
TESSERA_EXPORT void tessera_status_delete(tessera_status* status);
/* TESSERA_INVALID_ARGUMENT for a NULL status. */
TESSERA_EXPORT tessera_code tessera_status_code(const tessera_status* status);
/* "" when OK; valid until the status is next set or deleted. */
TESSERA_EXPORT const char* tessera_status_message(const tessera_status* status);

/* ---- tensors ---- */
/* A tensor with its own zeroed buffer (empty strings for TESSERA_STRING). */
TESSERA_EXPORT tessera_tensor* tessera_tensor_new(tessera_dtype dtype, const int64_t* dims, int num_dims,
                                                  tessera_status* status);
/* A tensor over the caller's buffer, which must hold exactly the elements' bytes, row-major
 * (INVALID_ARGUMENT when their number does not fit a size_t). The buffer is borrowed: when
 * the tensor is deleted, `deallocator(data, length, arg)` is called if it is not NULL.
 * Tessera copies it where a step needs its own (a fed value is copied once per run). Not for
 * TESSERA_STRING. */
TESSERA_EXPORT tessera_tensor* tessera_tensor_from_buffer(tessera_dtype dtype, const int64_t* dims, int num_dims,
                                                          void* data, size_t length,
                                                          void (*deallocator)(void* data, size_t length, void* arg),
                                                          void* arg, tessera_status* status);
TESSERA_EXPORT void tessera_tensor_delete(tessera_tensor* tensor);
/* 0 for a NULL tensor. */
TESSERA_EXPORT tessera_dtype tessera_tensor_dtype(const tessera_tensor* tensor);
TESSERA_EXPORT int tessera_tensor_num_dims(const tessera_tensor* tensor);
/* -1 for an index out of range. */
TESSERA_EXPORT int64_t tessera_tensor_dim(const tessera_tensor* tensor, int index);
TESSERA_EXPORT int64_t tessera_tensor_num_elements(const tessera_tensor* tensor);
/* The bytes of a numeric tensor's elements; 0 for strings. */
TESSERA_EXPORT size_t tessera_tensor_byte_size(const tessera_tensor* tensor);
/* The elements, row-major; NULL for strings or a NULL tensor. Writable for tensors made
 * by tessera_tensor_new or _from_buffer; a fetched tensor's data is read-only. A fetched
 * tensor's buffer is its own: never a feed's, another fetch's or the engine's (a result that
 * shares one, such as an Identity of a feed or a variable's value, is copied), so nothing
 * done to it reaches a feed or a variable, and nothing done to a feed reaches it. */
TESSERA_EXPORT void* tessera_tensor_data(const tessera_tensor* tensor);
/* String elements: the bytes of element `index` and their number in *length. */
TESSERA_EXPORT const char* tessera_tensor_string(const tessera_tensor* tensor, int64_t index, size_t* length,
                                                 tessera_status* status);
/* FAILED_PRECONDITION on a fetched tensor, which is read-only. */
TESSERA_EXPORT void tessera_tensor_set_string(tessera_tensor* tensor, int64_t index, const char* bytes,
                                              size_t length, tessera_status* status);

/* ---- graphs ---- */
/* Tessera's JSON graph. */
TESSERA_EXPORT tessera_graph* tessera_graph_import_json(const char* text, size_t length, tessera_status* status);
/* TensorFlow's GraphDef, binary (.pb) or text (.pbtxt), told apart by its bytes. */
TESSERA_EXPORT tessera_graph* tessera_graph_import_graphdef(const void* bytes, size_t length,
                                                            tessera_status* status);
/* A file of either form (.json, .pb, .pbtxt; others by their bytes). */
TESSERA_EXPORT tessera_graph* tessera_graph_import_file(const char* path, tessera_status* status);
TESSERA_EXPORT void tessera_graph_delete(tessera_graph* graph);
TESSERA_EXPORT int tessera_graph_num_nodes(const tessera_graph* graph);

/* ---- sessions ---- */
/* `config_json` is a session config in TensorFlow's ConfigProto field names (as
 * `tessera run --config` takes), or NULL for the defaults. The graph may be deleted after. */
TESSERA_EXPORT tessera_session* tessera_session_new(const tessera_graph* graph, const char* config_json,
                                                    tessera_status* status);
/* Feeds `feeds[i]` into tensor `feed_names[i]` ("x" or "x:1"), computes `fetch_names` into
 * `fetches` (new tensors the caller deletes; NULL where the run failed) and runs `targets`.
 * Feeds are not taken over: the caller still deletes them. */
TESSERA_EXPORT void tessera_session_run(tessera_session* session, const char* const* feed_names,
                                        tessera_tensor* const* feeds, int num_feeds, const char* const* fetch_names,
                                        tessera_tensor** fetches, int num_fetches, const char* const* targets,
                                        int num_targets, tessera_status* status);
/* Later runs fail with TESSERA_FAILED_PRECONDITION (TensorFlow's "closed session"). */
TESSERA_EXPORT void tessera_session_close(tessera_session* session, tessera_status* status);
TESSERA_EXPORT void tessera_session_delete(tessera_session* session);

/* Where the placer put each node, and why: as the device-placement log says it. The
 * strings live as long as the session. */
TESSERA_EXPORT int tessera_session_num_placements(const tessera_session* session);
TESSERA_EXPORT const char* tessera_session_placement_node(const tessera_session* session, int index);
TESSERA_EXPORT const char* tessera_session_placement_op(const tessera_session* session, int index);
TESSERA_EXPORT const char* tessera_session_placement_device(const tessera_session* session, int index);
TESSERA_EXPORT const char* tessera_session_placement_reason(const tessera_session* session, int index);

/* ---- SavedModels ---- */
/* Loads the SavedModel in `dir`: the MetaGraph tagged exactly `tags` ("serve" when
 * num_tags is 0), its variables restored and its init op run (see saved_model/saved_model.h).
 * A missing tag set is TESSERA_NOT_FOUND naming those the SavedModel has. */
TESSERA_EXPORT tessera_saved_model* tessera_saved_model_load(const char* dir, const char* const* tags, int num_tags,
                                                             const char* config_json, tessera_status* status);
/* Runs signature `signature` ("serving_default"): feeds `inputs[i]` to input key
 * `input_keys[i]`, computes the outputs named by `output_keys` (at least one) into
 * `outputs` (new tensors the caller deletes). An unknown key, a missing input or a feed of
 * the wrong dtype is TESSERA_INVALID_ARGUMENT naming the key. May be called concurrently on
 * one model; _delete must not race with a run. */
TESSERA_EXPORT void tessera_saved_model_run(const tessera_saved_model* model, const char* signature,
                                            const char* const* input_keys, tessera_tensor* const* inputs,
                                            int num_inputs, const char* const* output_keys, tessera_tensor** outputs,
                                            int num_outputs, tessera_status* status);
TESSERA_EXPORT void tessera_saved_model_delete(tessera_saved_model* model);

/* ---- logging ---- */
/* severity: 0 info, 1 warning, 2 error. `message` is valid during the call only. */
typedef void (*tessera_log_fn)(int severity, const char* message, size_t length, void* arg);
/* Sends the engine's log lines to `fn` instead of stderr; NULL restores stderr. */
TESSERA_EXPORT void tessera_set_log_sink(tessera_log_fn fn, void* arg);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_C_API_H_ */
