// Test handlers for tests/test_ffi.py, written against XLA's typed FFI headers
// (jax.ffi.include_dir()); each test runs them under real JAX and under tracejit.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "xla/ffi/api/c_api.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// --- the tutorial's rms_norm: a float attribute, one buffer in, one out ---------------------

static float ComputeRmsNorm(float eps, int64_t size, const float* x, float* y) {
  float sm = 0.0f;
  for (int64_t n = 0; n < size; ++n) sm += x[n] * x[n];
  float scale = 1.0f / std::sqrt(sm / float(size) + eps);
  for (int64_t n = 0; n < size; ++n) y[n] = x[n] * scale;
  return scale;
}

static ffi::Error RmsNormImpl(float eps, ffi::Buffer<ffi::F32> x,
                              ffi::ResultBuffer<ffi::F32> y) {
  auto dims = x.dimensions();
  if (dims.size() == 0) return ffi::Error::InvalidArgument("RmsNorm input must be an array");
  int64_t last = dims.back(), total = x.element_count();
  for (int64_t n = 0; n < total; n += last)
    ComputeRmsNorm(eps, last, &x.typed_data()[n], &y->typed_data()[n]);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNorm, RmsNormImpl,
                              ffi::Ffi::Bind()
                                  .Attr<float>("eps")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// --- every attribute kind: each value written to a float64 result, in a fixed order ---------

static ffi::Error AllAttrsImpl(bool b, int8_t i8, int16_t i16, int32_t i32, int64_t i64,
                               uint8_t u8, uint16_t u16, uint32_t u32, uint64_t u64,
                               float f32, double f64, std::string_view s,
                               ffi::Span<const int32_t> ai32, ffi::Span<const int64_t> ai64,
                               ffi::Span<const float> af32, ffi::Span<const double> af64,
                               ffi::Dictionary d, ffi::ResultBuffer<ffi::F64> out) {
  double* o = out->typed_data();
  int64_t n = out->element_count(), k = 0;
  auto put = [&](double v) { if (k < n) o[k++] = v; };
  put(b); put(i8); put(i16); put(i32); put(double(i64)); put(u8); put(u16); put(u32);
  put(double(u64)); put(f32); put(f64);
  put(double(s.size()));
  for (char c : s) put(double(c));
  for (auto v : ai32) put(v);
  for (auto v : ai64) put(double(v));
  for (auto v : af32) put(v);
  for (auto v : af64) put(v);
  auto x = d.get<int64_t>("x");
  if (x.has_error()) return x.error();
  auto name = d.get<std::string_view>("name");
  if (name.has_error()) return name.error();
  auto y = d.get<float>("y");
  if (y.has_error()) return y.error();
  put(double(d.size())); put(double(*x)); put(double(name->size())); put(*y);
  while (k < n) o[k++] = -1.0;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(AllAttrs, AllAttrsImpl,
                              ffi::Ffi::Bind()
                                  .Attr<bool>("b")
                                  .Attr<int8_t>("i8")
                                  .Attr<int16_t>("i16")
                                  .Attr<int32_t>("i32")
                                  .Attr<int64_t>("i64")
                                  .Attr<uint8_t>("u8")
                                  .Attr<uint16_t>("u16")
                                  .Attr<uint32_t>("u32")
                                  .Attr<uint64_t>("u64")
                                  .Attr<float>("f32")
                                  .Attr<double>("f64")
                                  .Attr<std::string_view>("s")
                                  .Attr<ffi::Span<const int32_t>>("ai32")
                                  .Attr<ffi::Span<const int64_t>>("ai64")
                                  .Attr<ffi::Span<const float>>("af32")
                                  .Attr<ffi::Span<const double>>("af64")
                                  .Attr<ffi::Dictionary>("d")
                                  .Ret<ffi::Buffer<ffi::F64>>());

// --- several results of different dtypes from any-typed buffers -----------------------------

static ffi::Error SumProdImpl(ffi::AnyBuffer a, ffi::AnyBuffer b,
                              ffi::ResultBuffer<ffi::F32> sum,
                              ffi::ResultBuffer<ffi::F32> prod,
                              ffi::ResultBuffer<ffi::S32> info) {
  if (a.element_type() != ffi::F32 || b.element_type() != ffi::F32)
    return ffi::Error::InvalidArgument("SumProd wants float32 arguments");
  if (a.element_count() != b.element_count())
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, "SumProd: sizes differ");
  const float* x = a.typed_data<float>();
  const float* y = b.typed_data<float>();
  for (size_t i = 0; i < a.element_count(); ++i) {
    sum->typed_data()[i] = x[i] + y[i];
    prod->typed_data()[i] = x[i] * y[i];
  }
  auto dims = a.dimensions();
  int32_t* o = info->typed_data();
  o[0] = int32_t(dims.size());
  o[1] = int32_t(a.element_count());
  o[2] = int32_t(a.size_bytes());
  o[3] = int32_t(static_cast<int>(b.element_type()));
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(SumProd, SumProdImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>());

// --- errors: the handler's own, by code --------------------------------------------------------

static ffi::Error FailImpl(int32_t code, std::string_view why, ffi::Buffer<ffi::F32> x,
                           ffi::ResultBuffer<ffi::F32> y) {
  if (code != 0) return ffi::Error(static_cast<ffi::ErrorCode>(code), std::string(why));
  for (size_t i = 0; i < x.element_count(); ++i) y->typed_data()[i] = x.typed_data()[i];
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Fail, FailImpl,
                              ffi::Ffi::Bind()
                                  .Attr<int32_t>("code")
                                  .Attr<std::string_view>("why")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// --- a side effect: a counter outside the program ---------------------------------------------

static std::atomic<int64_t> counter{0};
extern "C" int64_t counter_value() { return counter.load(); }

static ffi::Error CountImpl(int64_t by, ffi::ResultBuffer<ffi::S32> y) {
  counter += by;
  y->typed_data()[0] = 1;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Count, CountImpl,
                              ffi::Ffi::Bind().Attr<int64_t>("by").Ret<ffi::Buffer<ffi::S32>>());

// --- an output that aliases an input: reads only its result buffer ----------------------------

static ffi::Error InPlaceImpl(ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> z,
                             ffi::ResultBuffer<ffi::F32> y) {
  float* o = y->typed_data();
  for (size_t i = 0; i < y->element_count(); ++i) o[i] = o[i] * 2.0f + z.typed_data()[i];
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(InPlace, InPlaceImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// --- broadcasting add (for the vmap methods): out[i] = x[i % nx] + y[i % ny] -----------------

static ffi::Error BcastAddImpl(ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> y,
                               ffi::ResultBuffer<ffi::F32> out, ffi::ResultBuffer<ffi::S64> dims) {
  size_t nx = x.element_count(), ny = y.element_count();
  for (size_t i = 0; i < out->element_count(); ++i)
    out->typed_data()[i] = x.typed_data()[i % nx] + y.typed_data()[i % ny];
  // the shapes the handler saw: x's dims then y's, padded with -1
  int64_t* d = dims->typed_data();
  size_t k = 0, n = dims->element_count();
  for (auto v : x.dimensions()) if (k < n) d[k++] = v;
  if (k < n) d[k++] = -2;
  for (auto v : y.dimensions()) if (k < n) d[k++] = v;
  while (k < n) d[k++] = -1;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(BcastAdd, BcastAddImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::S64>>());

// --- a handler bundle: state made at instantiation, used at execution -------------------------

static std::atomic<int64_t> scales_deleted{0};
extern "C" int64_t scales_deleted_count() { return scales_deleted.load(); }

struct Scale {
  static ffi::TypeId id;
  explicit Scale(float v) : value(v) {}
  ~Scale() { ++scales_deleted; }  // (by the deleter registered with the type)
  float value;
};
ffi::TypeId Scale::id = {};
// (registered from Python, jax.ffi.register_ffi_type: this library links to no XLA_FFI_GetApi)

extern "C" XLA_FFI_TypeId* scale_type_id() { return &Scale::id; }
extern "C" XLA_FFI_TypeInfo* scale_type_info() {
  static XLA_FFI_TypeInfo info = ffi::MakeTypeInfo<Scale>();
  return &info;
}

static std::atomic<int64_t> instantiated{0};
extern "C" int64_t instantiate_count() { return instantiated.load(); }

static ffi::ErrorOr<std::unique_ptr<Scale>> ScaleInstantiate(float factor) {
  ++instantiated;
  return std::make_unique<Scale>(factor);
}

static ffi::Error ScaleExecute(Scale* state, ffi::Buffer<ffi::F32> x,
                               ffi::ResultBuffer<ffi::F32> y) {
  for (size_t i = 0; i < x.element_count(); ++i)
    y->typed_data()[i] = x.typed_data()[i] * state->value;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(ScaleInstantiateHandler, ScaleInstantiate,
                              ffi::Ffi::BindInstantiate().Attr<float>("factor"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(ScaleExecuteHandler, ScaleExecute,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::State<Scale>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// --- the thread pool: each element squared by a scheduled task --------------------------------

static ffi::Error ParallelSquareImpl(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> x,
                                     ffi::ResultBuffer<ffi::F32> y) {
  const float* in = x.typed_data();
  float* out = y->typed_data();
  int64_t n = int64_t(x.element_count());
  std::atomic<int64_t> done{0};
  for (int64_t i = 0; i < n; ++i)
    pool.Schedule([&, i] { out[i] = in[i] * in[i]; done.fetch_add(1); });
  while (done.load() < n) {
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(ParallelSquare, ParallelSquareImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// --- the context a CPU handler sees: run id, device ordinal, and whether a stream exists ------

static ffi::Error ContextImpl(int32_t ordinal, ffi::ResultBuffer<ffi::S32> y) {
  y->typed_data()[0] = ordinal;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Context, ContextImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Ret<ffi::Buffer<ffi::S32>>());

static ffi::Error StreamImpl(void* stream, ffi::ResultBuffer<ffi::S32> y) {
  y->typed_data()[0] = stream != nullptr;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Stream, StreamImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<void*>>()
                                  .Ret<ffi::Buffer<ffi::S32>>());

// --- every stage of a bundle, counted ---------------------------------------------------------

static std::atomic<int64_t> stage_counts[4];
extern "C" int64_t stage_count(int stage) { return stage_counts[stage].load(); }

static ffi::Error CountInstantiate() { ++stage_counts[0]; return ffi::Error::Success(); }
static ffi::Error CountPrepare() { ++stage_counts[1]; return ffi::Error::Success(); }
static ffi::Error CountInitialize() { ++stage_counts[2]; return ffi::Error::Success(); }
static ffi::Error CountExecute(ffi::ResultBuffer<ffi::S32> y) {
  ++stage_counts[3];
  y->typed_data()[0] = 7;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(StagesInstantiate, CountInstantiate, ffi::Ffi::BindInstantiate());
XLA_FFI_DEFINE_HANDLER_SYMBOL(StagesPrepare, CountPrepare, ffi::Ffi::BindPrepare());
XLA_FFI_DEFINE_HANDLER_SYMBOL(StagesInitialize, CountInitialize, ffi::Ffi::BindInitialize());
XLA_FFI_DEFINE_HANDLER_SYMBOL(StagesExecute, CountExecute,
                              ffi::Ffi::Bind().Ret<ffi::Buffer<ffi::S32>>());

// --- an asynchronous handler: its result is written, and its future completed, by a thread ----

#include <thread>

static ffi::Future AsyncFillImpl(int32_t fail, ffi::ResultBuffer<ffi::F32> y) {
  ffi::Promise promise;
  ffi::Future future(promise);
  float* out = y->typed_data();
  size_t n = y->element_count();
  std::thread([promise, out, n, fail]() mutable {
    for (size_t i = 0; i < n; ++i) out[i] = float(i) * 0.5f;
    if (fail) promise.SetError(ffi::Error(ffi::ErrorCode::kAborted, "async failure"));
    else promise.SetAvailable();
  }).detach();
  return future;
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(AsyncFill, AsyncFillImpl,
                              ffi::Ffi::Bind().Attr<int32_t>("fail").Ret<ffi::Buffer<ffi::F32>>());

// --- the scratch allocator and user data, which a CPU call does not have ----------------------

static ffi::Error ScratchImpl(ffi::ScratchAllocator scratch, ffi::ResultBuffer<ffi::S32> y) {
  auto mem = scratch.Allocate(64, 16);
  y->typed_data()[0] = mem.has_value();
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Scratch, ScratchImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ScratchAllocator>()
                                  .Ret<ffi::Buffer<ffi::S32>>());

static ffi::Error UserDataImpl(Scale* data, ffi::ResultBuffer<ffi::F32> y) {
  y->typed_data()[0] = data->value;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(UserDataHandler, UserDataImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::UserData<Scale>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// --- a result written and nothing read: every element set to an attribute ---------------------

static ffi::Error FillImpl(float value, ffi::ResultBuffer<ffi::F32> y) {
  for (size_t i = 0; i < y->element_count(); ++i) y->typed_data()[i] = value;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Fill, FillImpl,
                              ffi::Ffi::Bind().Attr<float>("value").Ret<ffi::Buffer<ffi::F32>>());

// --- an aliased result: doubled in place; whether the handler got one buffer for both --------

static ffi::Error AliasInfoImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y,
                                ffi::ResultBuffer<ffi::S32> same) {
  float* o = y->typed_data();
  for (size_t i = 0; i < y->element_count(); ++i) o[i] = o[i] * 2.0f + 1.0f;
  same->typed_data()[0] = x.untyped_data() == y->untyped_data();
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(AliasInfo, AliasInfoImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>());
