/*
 * libascendcl_stub.c - a stand-in for libascendcl.so, for testing dumpcmp's ctypes binding.
 *
 * It exports the AscendCL symbols the agent calls, with the C signatures of acl.h, so the
 * binding's argtypes/restype declarations are exercised through a real C ABI. Nothing here
 * touches an NPU: "device" memory is malloc'd host memory that the stub remembers, so a copy in
 * the wrong direction or a free of a foreign pointer is caught.
 *
 * Build: cc -shared -fPIC -o libascendcl.so libascendcl_stub.c
 *        (-DSTUB_WITHOUT_RECENT_ERR_MSG leaves out aclGetRecentErrMsg)
 *
 * Test hooks (not AscendCL):
 *   void        stub_reset(void)                        forget everything (ctypes caches the handle)
 *   int         stub_call_count(void)                   number of recorded calls
 *   const char *stub_call(int i)                        "name(arg,...)" of call i, NULL if out of range
 *   void        stub_set_return(const char *fn, int c)  make fn fail with c (0 = behave normally);
 *                                                       pointer-returning functions return NULL
 *   void        stub_set_return_after(const char *fn, int n, int c)
 *                                                       the same, after n more calls succeed
 *   void        stub_set_model_io(size_t in, size_t out) byte sizes of models loaded from now on
 *   void        stub_set_dynamic_output(size_t n)       models loaded from now on have an output of
 *                                                       unknown size (the description says 0) that
 *                                                       turns out to be n bytes; 0 = static again
 *   int         stub_live(const char *kind)             live "device_memory", "host_memory",
 *                                                       "data_buffer", "dataset" or "desc" objects
 *   int         stub_init_refs(void)                    aclInit references not given back
 *
 * A model has one input and one output; executing it writes out[i] = in[i % in_size] + 1, so a
 * test can see that its bytes really went through device memory and back. As in AscendCL, a
 * NULL, 0-byte output buffer makes aclmdlExecute allocate the output in device memory (the
 * buffer then points at it, and the caller must aclrtFree it).
 *
 * aclInit counts references as CANN 8.x does: a repeated call returns
 * ACL_ERROR_REPEAT_INITIALIZE and adds one; aclFinalizeReference gives one back (finalizing at
 * zero); aclFinalize finalizes whatever the count.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int aclError;
typedef struct aclmdlDesc aclmdlDesc;
typedef struct aclmdlDataset aclmdlDataset;
typedef struct aclDataBuffer aclDataBuffer;

typedef enum {
    ACL_MEM_MALLOC_HUGE_FIRST = 0,
    ACL_MEM_MALLOC_HUGE_ONLY = 1,
    ACL_MEM_MALLOC_NORMAL_ONLY = 2
} aclrtMemMallocPolicy;

typedef enum {
    ACL_MEMCPY_HOST_TO_HOST = 0,
    ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3
} aclrtMemcpyKind;

/* Codes from acl_base.h / rt_error_codes.h that the stub can return on its own. */
enum {
    ACL_SUCCESS = 0,
    ACL_ERROR_INVALID_PARAM = 100000,
    ACL_ERROR_UNINITIALIZE = 100001,
    ACL_ERROR_REPEAT_INITIALIZE = 100002,
    ACL_ERROR_INVALID_FILE = 100003,
    ACL_ERROR_INVALID_MODEL_ID = 100011,
    ACL_ERROR_READ_MODEL_FAILURE = 100014,
    ACL_ERROR_MODEL_INPUT_NOT_MATCH = 100017,
    ACL_ERROR_MODEL_OUTPUT_NOT_MATCH = 100018,
    ACL_ERROR_REPEAT_FINALIZE = 100037,
    ACL_ERROR_DUMP_NOT_RUN = 100045,
    ACL_ERROR_BAD_ALLOC = 200000,
    ACL_ERROR_RT_PARAM_INVALID = 107000,
    ACL_ERROR_RT_INVALID_DEVICEID = 107001,
    ACL_ERROR_RT_CONTEXT_NULL = 107002,
    ACL_ERROR_RT_MEMORY_ALLOCATION = 207001
};

#define STUB_MAX_BUFFERS 16
#define STUB_MAX_MODELS 64
#define STUB_MAX_ALLOCS 256
#define STUB_MAX_OVERRIDES 64
#define STUB_MAX_DEVICES 8
#define STUB_LINE 1024

struct aclDataBuffer {
    void *data;
    size_t size;
};

struct aclmdlDataset {
    aclDataBuffer *buffers[STUB_MAX_BUFFERS];
    size_t count;
};

struct aclmdlDesc {
    int filled;
    uint32_t model_id;
    size_t input_size;
    size_t output_size;
};

typedef struct {
    int loaded;
    size_t input_size;
    size_t output_size; /* what the description reports: 0 for a dynamic output */
    size_t produced;    /* bytes execute writes */
} StubModel;

typedef struct {
    void *ptr;
    size_t size;
} StubAlloc;

typedef struct {
    char name[64];
    int code;
    int skip; /* calls still allowed to behave normally before `code` is returned */
} StubOverride;

/* ---- stub state ------------------------------------------------------------------------- */

static int g_init_refs; /* AscendCL is initialised while this is > 0 */
static int g_dump_initialized;
static int g_device_refs[STUB_MAX_DEVICES];
static StubModel g_models[STUB_MAX_MODELS + 1]; /* index = model id; 0 is never handed out */
static uint32_t g_next_model_id = 1;
static size_t g_model_input_size = 16;
static size_t g_model_output_size = 16;
static size_t g_model_dynamic_output;

static StubAlloc g_allocs[STUB_MAX_ALLOCS];
static StubAlloc g_host_allocs[STUB_MAX_ALLOCS];
static int g_live_buffers;
static int g_live_datasets;
static int g_live_descs;

static StubOverride g_overrides[STUB_MAX_OVERRIDES];
static int g_override_count;

static char **g_log;
static int g_log_len;
static int g_log_cap;

static char g_err[STUB_LINE];
static int g_has_err;

/* ---- helpers ---------------------------------------------------------------------------- */

static void record(const char *fmt, ...)
{
    char line[STUB_LINE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (g_log_len == g_log_cap) {
        int cap = g_log_cap ? g_log_cap * 2 : 64;
        char **grown = realloc(g_log, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            return;
        }
        g_log = grown;
        g_log_cap = cap;
    }
    size_t n = strlen(line) + 1;
    char *copy = malloc(n);
    if (copy == NULL) {
        return;
    }
    memcpy(copy, line, n);
    g_log[g_log_len++] = copy;
}

static const char *str_or_null(const char *s)
{
    return s == NULL ? "NULL" : s;
}

/* Remember why the last call failed, for aclGetRecentErrMsg, and pass the code through. */
static aclError fail(const char *fn, aclError code, const char *why)
{
    snprintf(g_err, sizeof g_err, "stub %s failed with %d: %s", fn, code, why);
    g_has_err = 1;
    return code;
}

static int forced_return(const char *fn)
{
    for (int i = 0; i < g_override_count; ++i) {
        if (strcmp(g_overrides[i].name, fn) == 0) {
            if (g_overrides[i].skip > 0) {
                --g_overrides[i].skip;
                return 0;
            }
            return g_overrides[i].code;
        }
    }
    return 0;
}

#define STUB_FORCED(fn)                                                  \
    do {                                                                 \
        int forced_code_ = forced_return(fn);                            \
        if (forced_code_ != 0) {                                         \
            return fail(fn, forced_code_, "forced by stub_set_return");  \
        }                                                                \
    } while (0)

#define STUB_FORCED_NULL(fn)                                             \
    do {                                                                 \
        int forced_code_ = forced_return(fn);                            \
        if (forced_code_ != 0) {                                         \
            fail(fn, forced_code_, "forced by stub_set_return");         \
            return NULL;                                                 \
        }                                                                \
    } while (0)

static int file_exists(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return 0;
    }
    fclose(f);
    return 1;
}

static StubAlloc *find_alloc_exact(StubAlloc *table, const void *ptr)
{
    for (int i = 0; i < STUB_MAX_ALLOCS; ++i) {
        if (table[i].ptr != NULL && table[i].ptr == ptr) {
            return &table[i];
        }
    }
    return NULL;
}

/* malloc `size` bytes into a free slot of `table`; NULL when it is full or malloc fails. */
static void *remember_alloc(StubAlloc *table, size_t size)
{
    for (int i = 0; i < STUB_MAX_ALLOCS; ++i) {
        if (table[i].ptr == NULL) {
            void *p = malloc(size);
            if (p != NULL) {
                table[i].ptr = p;
                table[i].size = size;
            }
            return p;
        }
    }
    return NULL;
}

static void forget_allocs(StubAlloc *table)
{
    for (int i = 0; i < STUB_MAX_ALLOCS; ++i) {
        free(table[i].ptr);
        table[i].ptr = NULL;
        table[i].size = 0;
    }
}

/* Is [ptr, ptr + count) inside one device allocation? */
static int is_device_range(const void *ptr, size_t count)
{
    const char *p = ptr;
    for (int i = 0; i < STUB_MAX_ALLOCS; ++i) {
        const char *base = g_allocs[i].ptr;
        if (base != NULL && p >= base && p + count <= base + g_allocs[i].size) {
            return 1;
        }
    }
    return 0;
}

static int live_allocs(const StubAlloc *table)
{
    int n = 0;
    for (int i = 0; i < STUB_MAX_ALLOCS; ++i) {
        n += table[i].ptr != NULL;
    }
    return n;
}

static int model_is_loaded(uint32_t id)
{
    return id >= 1 && id <= STUB_MAX_MODELS && g_models[id].loaded;
}

/* ---- test hooks ------------------------------------------------------------------------- */

void stub_reset(void)
{
    for (int i = 0; i < g_log_len; ++i) {
        free(g_log[i]);
    }
    free(g_log);
    g_log = NULL;
    g_log_len = g_log_cap = 0;
    forget_allocs(g_allocs);
    forget_allocs(g_host_allocs);
    memset(g_models, 0, sizeof g_models);
    memset(g_device_refs, 0, sizeof g_device_refs);
    g_next_model_id = 1;
    g_model_input_size = 16;
    g_model_output_size = 16;
    g_model_dynamic_output = 0;
    g_init_refs = g_dump_initialized = 0;
    g_live_buffers = g_live_datasets = g_live_descs = 0;
    g_override_count = 0;
    g_has_err = 0;
}

int stub_call_count(void)
{
    return g_log_len;
}

const char *stub_call(int i)
{
    return (i >= 0 && i < g_log_len) ? g_log[i] : NULL;
}

void stub_set_return_after(const char *fn, int skip, int code)
{
    StubOverride *o = NULL;
    for (int i = 0; i < g_override_count && o == NULL; ++i) {
        if (strcmp(g_overrides[i].name, fn) == 0) {
            o = &g_overrides[i];
        }
    }
    if (o == NULL) {
        if (g_override_count == STUB_MAX_OVERRIDES) {
            return;
        }
        o = &g_overrides[g_override_count++];
        snprintf(o->name, sizeof o->name, "%s", fn);
    }
    o->code = code;
    o->skip = skip;
}

void stub_set_return(const char *fn, int code)
{
    stub_set_return_after(fn, 0, code);
}

void stub_set_model_io(size_t in_size, size_t out_size)
{
    g_model_input_size = in_size;
    g_model_output_size = out_size;
}

void stub_set_dynamic_output(size_t produced)
{
    g_model_dynamic_output = produced;
}

int stub_init_refs(void)
{
    return g_init_refs;
}

int stub_live(const char *kind)
{
    if (strcmp(kind, "device_memory") == 0) {
        return live_allocs(g_allocs);
    }
    if (strcmp(kind, "host_memory") == 0) {
        return live_allocs(g_host_allocs);
    }
    if (strcmp(kind, "data_buffer") == 0) {
        return g_live_buffers;
    }
    if (strcmp(kind, "dataset") == 0) {
        return g_live_datasets;
    }
    if (strcmp(kind, "desc") == 0) {
        return g_live_descs;
    }
    return -1;
}

/* ---- acl.h: init / finalize / error message --------------------------------------------- */

aclError aclInit(const char *configPath)
{
    record("aclInit(%s)", str_or_null(configPath));
    STUB_FORCED("aclInit");
    if (g_init_refs > 0) {
        ++g_init_refs;
        return fail("aclInit", ACL_ERROR_REPEAT_INITIALIZE, "aclInit has already been called");
    }
    g_init_refs = 1;
    return ACL_SUCCESS;
}

static void finalize_now(void)
{
    g_init_refs = g_dump_initialized = 0;
    memset(g_models, 0, sizeof g_models);
    memset(g_device_refs, 0, sizeof g_device_refs);
}

aclError aclFinalize(void)
{
    record("aclFinalize()");
    STUB_FORCED("aclFinalize");
    if (g_init_refs == 0) {
        return fail("aclFinalize", ACL_ERROR_REPEAT_FINALIZE, "aclInit has not been called");
    }
    finalize_now();
    return ACL_SUCCESS;
}

#ifndef STUB_WITHOUT_FINALIZE_REFERENCE
aclError aclFinalizeReference(uint64_t *refCount)
{
    record("aclFinalizeReference()");
    STUB_FORCED("aclFinalizeReference");
    if (g_init_refs == 0) {
        return fail("aclFinalizeReference", ACL_ERROR_REPEAT_FINALIZE, "aclInit has not been called");
    }
    if (--g_init_refs == 0) {
        finalize_now();
    }
    if (refCount != NULL) {
        *refCount = (uint64_t)g_init_refs;
    }
    return ACL_SUCCESS;
}
#endif

/*
 * Like AscendCL, reading the message clears it; the pointer stays valid until the next read.
 * -DSTUB_WITHOUT_RECENT_ERR_MSG builds a library without it, as in very old CANN releases
 * (-DSTUB_WITHOUT_FINALIZE_REFERENCE likewise leaves out aclFinalizeReference).
 */
#ifndef STUB_WITHOUT_RECENT_ERR_MSG
static char g_err_out[STUB_LINE];

const char *aclGetRecentErrMsg(void)
{
    if (!g_has_err) {
        return NULL;
    }
    memcpy(g_err_out, g_err, sizeof g_err_out);
    g_has_err = 0;
    return g_err_out;
}
#endif

/* ---- acl_rt.h: devices -------------------------------------------------------------------- */

aclError aclrtSetDevice(int32_t deviceId)
{
    record("aclrtSetDevice(%d)", (int)deviceId);
    STUB_FORCED("aclrtSetDevice");
    if (g_init_refs == 0) {
        return fail("aclrtSetDevice", ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
    }
    if (deviceId < 0 || deviceId >= STUB_MAX_DEVICES) {
        return fail("aclrtSetDevice", ACL_ERROR_RT_INVALID_DEVICEID, "no such device");
    }
    ++g_device_refs[deviceId];
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId)
{
    record("aclrtResetDevice(%d)", (int)deviceId);
    STUB_FORCED("aclrtResetDevice");
    if (g_init_refs == 0) {
        return fail("aclrtResetDevice", ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
    }
    if (deviceId < 0 || deviceId >= STUB_MAX_DEVICES) {
        return fail("aclrtResetDevice", ACL_ERROR_RT_INVALID_DEVICEID, "no such device");
    }
    if (g_device_refs[deviceId] > 0) {
        --g_device_refs[deviceId];
    }
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeDevice(void)
{
    record("aclrtSynchronizeDevice()");
    STUB_FORCED("aclrtSynchronizeDevice");
    if (g_init_refs == 0) {
        return fail("aclrtSynchronizeDevice", ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
    }
    for (int i = 0; i < STUB_MAX_DEVICES; ++i) {
        if (g_device_refs[i] > 0) {
            return ACL_SUCCESS;
        }
    }
    return fail("aclrtSynchronizeDevice", ACL_ERROR_RT_CONTEXT_NULL, "no device has been set");
}

/* ---- acl_rt.h: memory ------------------------------------------------------------------- */

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    record("aclrtMalloc(%zu,%d)", size, (int)policy);
    STUB_FORCED("aclrtMalloc");
    if (g_init_refs == 0) {
        return fail("aclrtMalloc", ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
    }
    if (devPtr == NULL || size == 0) {
        return fail("aclrtMalloc", ACL_ERROR_INVALID_PARAM, "devPtr is NULL or size is 0");
    }
    void *p = remember_alloc(g_allocs, size);
    if (p == NULL) {
        return fail("aclrtMalloc", ACL_ERROR_RT_MEMORY_ALLOCATION, "out of device memory");
    }
    *devPtr = p;
    return ACL_SUCCESS;
}

static aclError release(StubAlloc *table, void *ptr, const char *fn)
{
    StubAlloc *a = find_alloc_exact(table, ptr);
    if (a == NULL) {
        return fail(fn, ACL_ERROR_RT_PARAM_INVALID, "not a pointer from the matching allocation call");
    }
    free(a->ptr);
    a->ptr = NULL;
    a->size = 0;
    return ACL_SUCCESS;
}

aclError aclrtFree(void *devPtr)
{
    record("aclrtFree()");
    STUB_FORCED("aclrtFree");
    return release(g_allocs, devPtr, "aclrtFree");
}

aclError aclrtMallocHost(void **hostPtr, size_t size)
{
    record("aclrtMallocHost(%zu)", size);
    STUB_FORCED("aclrtMallocHost");
    if (g_init_refs == 0) {
        return fail("aclrtMallocHost", ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
    }
    if (hostPtr == NULL || size == 0) {
        return fail("aclrtMallocHost", ACL_ERROR_INVALID_PARAM, "hostPtr is NULL or size is 0");
    }
    void *p = remember_alloc(g_host_allocs, size);
    if (p == NULL) {
        return fail("aclrtMallocHost", ACL_ERROR_RT_MEMORY_ALLOCATION, "out of host memory");
    }
    *hostPtr = p;
    return ACL_SUCCESS;
}

aclError aclrtFreeHost(void *hostPtr)
{
    record("aclrtFreeHost()");
    STUB_FORCED("aclrtFreeHost");
    return release(g_host_allocs, hostPtr, "aclrtFreeHost");
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind)
{
    record("aclrtMemcpy(%zu,%zu,%d)", destMax, count, (int)kind);
    STUB_FORCED("aclrtMemcpy");
    if (dst == NULL || src == NULL || count > destMax) {
        return fail("aclrtMemcpy", ACL_ERROR_INVALID_PARAM, "NULL pointer or count > destMax");
    }
    int dst_dev = is_device_range(dst, count);
    int src_dev = is_device_range(src, count);
    int ok;
    switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: ok = !dst_dev && !src_dev; break;
    case ACL_MEMCPY_HOST_TO_DEVICE: ok = dst_dev && !src_dev; break;
    case ACL_MEMCPY_DEVICE_TO_HOST: ok = !dst_dev && src_dev; break;
    case ACL_MEMCPY_DEVICE_TO_DEVICE: ok = dst_dev && src_dev; break;
    default: ok = 0; break;
    }
    if (!ok) {
        return fail("aclrtMemcpy", ACL_ERROR_RT_PARAM_INVALID, "pointers do not match the copy kind");
    }
    memcpy(dst, src, count);
    return ACL_SUCCESS;
}

/* ---- acl_base.h: data buffers ------------------------------------------------------------- */

aclDataBuffer *aclCreateDataBuffer(void *data, size_t size)
{
    record("aclCreateDataBuffer(%zu)", size);
    STUB_FORCED_NULL("aclCreateDataBuffer");
    aclDataBuffer *b = malloc(sizeof *b);
    if (b == NULL) {
        fail("aclCreateDataBuffer", ACL_ERROR_BAD_ALLOC, "out of memory");
        return NULL;
    }
    b->data = data;
    b->size = size;
    ++g_live_buffers;
    return b;
}

aclError aclDestroyDataBuffer(const aclDataBuffer *dataBuffer)
{
    record("aclDestroyDataBuffer()");
    STUB_FORCED("aclDestroyDataBuffer");
    if (dataBuffer == NULL) {
        return fail("aclDestroyDataBuffer", ACL_ERROR_INVALID_PARAM, "dataBuffer is NULL");
    }
    free((void *)dataBuffer);
    --g_live_buffers;
    return ACL_SUCCESS;
}

void *aclGetDataBufferAddr(const aclDataBuffer *dataBuffer)
{
    record("aclGetDataBufferAddr()");
    return dataBuffer == NULL ? NULL : dataBuffer->data;
}

size_t aclGetDataBufferSizeV2(const aclDataBuffer *dataBuffer)
{
    record("aclGetDataBufferSizeV2()");
    return dataBuffer == NULL ? 0 : dataBuffer->size;
}

/* ---- acl_mdl.h: datasets and descriptions ----------------------------------------------- */

aclmdlDataset *aclmdlCreateDataset(void)
{
    record("aclmdlCreateDataset()");
    STUB_FORCED_NULL("aclmdlCreateDataset");
    aclmdlDataset *d = calloc(1, sizeof *d);
    if (d == NULL) {
        fail("aclmdlCreateDataset", ACL_ERROR_BAD_ALLOC, "out of memory");
        return NULL;
    }
    ++g_live_datasets;
    return d;
}

aclError aclmdlDestroyDataset(const aclmdlDataset *dataset)
{
    record("aclmdlDestroyDataset()");
    STUB_FORCED("aclmdlDestroyDataset");
    if (dataset == NULL) {
        return fail("aclmdlDestroyDataset", ACL_ERROR_INVALID_PARAM, "dataset is NULL");
    }
    /* As in AscendCL, the buffers are not the dataset's to destroy. */
    free((void *)dataset);
    --g_live_datasets;
    return ACL_SUCCESS;
}

aclError aclmdlAddDatasetBuffer(aclmdlDataset *dataset, aclDataBuffer *dataBuffer)
{
    record("aclmdlAddDatasetBuffer()");
    STUB_FORCED("aclmdlAddDatasetBuffer");
    if (dataset == NULL || dataBuffer == NULL || dataset->count == STUB_MAX_BUFFERS) {
        return fail("aclmdlAddDatasetBuffer", ACL_ERROR_INVALID_PARAM, "NULL argument or dataset full");
    }
    dataset->buffers[dataset->count++] = dataBuffer;
    return ACL_SUCCESS;
}

size_t aclmdlGetDatasetNumBuffers(const aclmdlDataset *dataset)
{
    record("aclmdlGetDatasetNumBuffers()");
    return dataset == NULL ? 0 : dataset->count;
}

aclDataBuffer *aclmdlGetDatasetBuffer(const aclmdlDataset *dataset, size_t index)
{
    record("aclmdlGetDatasetBuffer(%zu)", index);
    return (dataset == NULL || index >= dataset->count) ? NULL : dataset->buffers[index];
}

aclmdlDesc *aclmdlCreateDesc(void)
{
    record("aclmdlCreateDesc()");
    STUB_FORCED_NULL("aclmdlCreateDesc");
    aclmdlDesc *d = calloc(1, sizeof *d);
    if (d == NULL) {
        fail("aclmdlCreateDesc", ACL_ERROR_BAD_ALLOC, "out of memory");
        return NULL;
    }
    ++g_live_descs;
    return d;
}

aclError aclmdlDestroyDesc(aclmdlDesc *modelDesc)
{
    record("aclmdlDestroyDesc()");
    STUB_FORCED("aclmdlDestroyDesc");
    if (modelDesc == NULL) {
        return fail("aclmdlDestroyDesc", ACL_ERROR_INVALID_PARAM, "modelDesc is NULL");
    }
    free(modelDesc);
    --g_live_descs;
    return ACL_SUCCESS;
}

aclError aclmdlGetDesc(aclmdlDesc *modelDesc, uint32_t modelId)
{
    record("aclmdlGetDesc(%u)", (unsigned)modelId);
    STUB_FORCED("aclmdlGetDesc");
    if (modelDesc == NULL) {
        return fail("aclmdlGetDesc", ACL_ERROR_INVALID_PARAM, "modelDesc is NULL");
    }
    if (!model_is_loaded(modelId)) {
        return fail("aclmdlGetDesc", ACL_ERROR_INVALID_MODEL_ID, "no model with this id");
    }
    modelDesc->filled = 1;
    modelDesc->model_id = modelId;
    modelDesc->input_size = g_models[modelId].input_size;
    modelDesc->output_size = g_models[modelId].output_size;
    return ACL_SUCCESS;
}

size_t aclmdlGetNumInputs(aclmdlDesc *modelDesc)
{
    record("aclmdlGetNumInputs()");
    return (modelDesc != NULL && modelDesc->filled) ? 1 : 0;
}

size_t aclmdlGetNumOutputs(aclmdlDesc *modelDesc)
{
    record("aclmdlGetNumOutputs()");
    return (modelDesc != NULL && modelDesc->filled) ? 1 : 0;
}

size_t aclmdlGetInputSizeByIndex(aclmdlDesc *modelDesc, size_t index)
{
    record("aclmdlGetInputSizeByIndex(%zu)", index);
    return (modelDesc != NULL && modelDesc->filled && index == 0) ? modelDesc->input_size : 0;
}

size_t aclmdlGetOutputSizeByIndex(aclmdlDesc *modelDesc, size_t index)
{
    record("aclmdlGetOutputSizeByIndex(%zu)", index);
    return (modelDesc != NULL && modelDesc->filled && index == 0) ? modelDesc->output_size : 0;
}

/* ---- acl_mdl.h: dump configuration ------------------------------------------------------ */

aclError aclmdlInitDump(void)
{
    record("aclmdlInitDump()");
    STUB_FORCED("aclmdlInitDump");
    if (g_init_refs == 0) {
        return fail("aclmdlInitDump", ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
    }
    if (g_dump_initialized) {
        return fail("aclmdlInitDump", ACL_ERROR_REPEAT_INITIALIZE, "aclmdlInitDump already called");
    }
    g_dump_initialized = 1;
    return ACL_SUCCESS;
}

aclError aclmdlSetDump(const char *dumpCfgPath)
{
    record("aclmdlSetDump(%s)", str_or_null(dumpCfgPath));
    STUB_FORCED("aclmdlSetDump");
    if (g_init_refs == 0) {
        return fail("aclmdlSetDump", ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
    }
    if (!g_dump_initialized) {
        return fail("aclmdlSetDump", ACL_ERROR_DUMP_NOT_RUN, "aclmdlInitDump has not been called");
    }
    if (dumpCfgPath == NULL) {
        return fail("aclmdlSetDump", ACL_ERROR_INVALID_PARAM, "dumpCfgPath is NULL");
    }
    if (!file_exists(dumpCfgPath)) {
        return fail("aclmdlSetDump", ACL_ERROR_INVALID_FILE, "cannot open the dump config");
    }
    return ACL_SUCCESS;
}

aclError aclmdlFinalizeDump(void)
{
    record("aclmdlFinalizeDump()");
    STUB_FORCED("aclmdlFinalizeDump");
    if (g_init_refs == 0) {
        return fail("aclmdlFinalizeDump", ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
    }
    if (!g_dump_initialized) {
        return fail("aclmdlFinalizeDump", ACL_ERROR_DUMP_NOT_RUN, "aclmdlInitDump has not been called");
    }
    g_dump_initialized = 0;
    return ACL_SUCCESS;
}

/* ---- acl_mdl.h: models ------------------------------------------------------------------ */

aclError aclmdlLoadFromFile(const char *modelPath, uint32_t *modelId)
{
    record("aclmdlLoadFromFile(%s)", str_or_null(modelPath));
    STUB_FORCED("aclmdlLoadFromFile");
    if (g_init_refs == 0) {
        return fail("aclmdlLoadFromFile", ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
    }
    if (modelPath == NULL || modelId == NULL) {
        return fail("aclmdlLoadFromFile", ACL_ERROR_INVALID_PARAM, "NULL argument");
    }
    if (!file_exists(modelPath)) {
        return fail("aclmdlLoadFromFile", ACL_ERROR_READ_MODEL_FAILURE, "cannot read the model file");
    }
    if (g_next_model_id > STUB_MAX_MODELS) {
        return fail("aclmdlLoadFromFile", ACL_ERROR_BAD_ALLOC, "too many models");
    }
    uint32_t id = g_next_model_id++;
    g_models[id].loaded = 1;
    g_models[id].input_size = g_model_input_size;
    g_models[id].output_size = g_model_dynamic_output ? 0 : g_model_output_size;
    g_models[id].produced = g_model_dynamic_output ? g_model_dynamic_output : g_model_output_size;
    *modelId = id;
    return ACL_SUCCESS;
}

aclError aclmdlUnload(uint32_t modelId)
{
    record("aclmdlUnload(%u)", (unsigned)modelId);
    STUB_FORCED("aclmdlUnload");
    if (g_init_refs == 0) {
        return fail("aclmdlUnload", ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
    }
    if (!model_is_loaded(modelId)) {
        return fail("aclmdlUnload", ACL_ERROR_INVALID_MODEL_ID, "no model with this id");
    }
    g_models[modelId].loaded = 0;
    return ACL_SUCCESS;
}

/* One buffer of exactly `size` bytes, in device memory unless it is empty. */
static int dataset_matches(const aclmdlDataset *d, size_t size)
{
    if (d == NULL || d->count != 1) {
        return 0;
    }
    const aclDataBuffer *b = d->buffers[0];
    return b->size == size && (size == 0 || is_device_range(b->data, size));
}

/* The output buffer for `produced` bytes: allocated here for a NULL, 0-byte buffer (the caller
 * frees it), else the caller's, which must be device memory large enough. 0 = does not fit. */
static int prepare_output(aclmdlDataset *d, size_t produced)
{
    if (d == NULL || d->count != 1) {
        return 0;
    }
    aclDataBuffer *b = d->buffers[0];
    if (b->data == NULL && b->size == 0 && produced > 0) {
        b->data = remember_alloc(g_allocs, produced);
        b->size = produced;
        return b->data != NULL;
    }
    return b->size >= produced && (produced == 0 || is_device_range(b->data, produced));
}

aclError aclmdlExecute(uint32_t modelId, const aclmdlDataset *input, aclmdlDataset *output)
{
    record("aclmdlExecute(%u)", (unsigned)modelId);
    STUB_FORCED("aclmdlExecute");
    if (g_init_refs == 0) {
        return fail("aclmdlExecute", ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
    }
    if (!model_is_loaded(modelId)) {
        return fail("aclmdlExecute", ACL_ERROR_INVALID_MODEL_ID, "no model with this id");
    }
    const StubModel *m = &g_models[modelId];
    if (!dataset_matches(input, m->input_size)) {
        return fail("aclmdlExecute", ACL_ERROR_MODEL_INPUT_NOT_MATCH, "input dataset does not fit the model");
    }
    if (!prepare_output(output, m->produced)) {
        return fail("aclmdlExecute", ACL_ERROR_MODEL_OUTPUT_NOT_MATCH, "output dataset does not fit the model");
    }
    const unsigned char *in = input->buffers[0]->data;
    unsigned char *out = output->buffers[0]->data;
    for (size_t i = 0; i < m->produced; ++i) {
        out[i] = m->input_size ? (unsigned char)(in[i % m->input_size] + 1) : 0;
    }
    return ACL_SUCCESS;
}
