// tileforge._core: the C++ API (gemm, prepare/GemmPlan) on DLPack arrays through nanobind: NumPy on the CPU, PyTorch
// and CuPy on the GPU, read and written in place, never copied. Only the public API of libtileforge is used.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <tileforge/tileforge.hpp>

namespace nb = nanobind;
namespace tf = tileforge;

namespace {

using Array = nb::ndarray<nb::ro>;     // A and B: read only
using Output = nb::ndarray<>;          // C: written in place

constexpr int kDLCPU = 1, kDLCUDA = 2, kDLCUDAManaged = 13;

// Raised as tileforge.Unsupported (a RuntimeError): a valid problem no tileforge kernel runs on that device, so that
// a caller such as the PyTorch operator can fall back to its own library for exactly that case and no other.
struct UnsupportedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A failed Status as the Python exception a caller expects: ValueError for a bad argument (the message names it),
// tileforge.Unsupported when no kernel can run the problem, RuntimeError otherwise.
void raise_if(const tf::Status& s) {
  if (s.ok()) return;
  if (s.code() == tf::Code::invalid_argument) throw nb::value_error(s.to_string().c_str());
  if (s.code() == tf::Code::unsupported) throw UnsupportedError(s.to_string());
  throw std::runtime_error(s.to_string());
}

std::string dtype_name(nb::dlpack::dtype t) {
  return "code " + std::to_string(int(t.code)) + ", " + std::to_string(int(t.bits)) + " bits x " +
         std::to_string(int(t.lanes));
}

tf::DType dtype_of(const char* name, nb::dlpack::dtype t) {
  using code = nb::dlpack::dtype_code;
  if (t.lanes == 1 && t.code == uint8_t(code::Float) && t.bits == 32) return tf::DType::f32;
  if (t.lanes == 1 && t.code == uint8_t(code::Float) && t.bits == 16) return tf::DType::f16;
  if (t.lanes == 1 && t.code == uint8_t(code::Bfloat) && t.bits == 16) return tf::DType::bf16;
  throw nb::type_error((std::string(name) + " has dtype " + dtype_name(t) +
                        " (allowed: float32, float16, bfloat16)").c_str());
}

// One operand's matrices: rows x cols in a batch of `batch`, stored row- or column-major with leading dimension
// `ld` and batch stride `stride`, as the array's shape and strides (in elements) say.
struct View {
  int64_t batch = 1, rows = 0, cols = 0, ld = 0, stride = 0;
  bool row_major = true;
};

template <typename A>
View view_of(const char* name, const A& x) {
  const std::size_t nd = x.ndim();
  if (nd != 2 && nd != 3) {
    throw nb::value_error((std::string(name) + " has " + std::to_string(nd) +
                           " dimensions (allowed: 2, a matrix, or 3, a batch of matrices)").c_str());
  }
  View v;
  const std::size_t r = nd - 2, c = nd - 1;
  v.rows = int64_t(x.shape(r));
  v.cols = int64_t(x.shape(c));
  v.batch = nd == 3 ? int64_t(x.shape(0)) : 1;
  const int64_t sr = x.stride(r), sc = x.stride(c);
  // A dimension of extent 1 has no meaningful stride (frameworks report anything there): it never decides.
  if ((sc == 1 || v.cols <= 1) && sr >= std::max<int64_t>(1, v.cols)) {
    v.row_major = true;
    v.ld = std::max<int64_t>({sr, v.cols, 1});
  } else if ((sr == 1 || v.rows <= 1) && sc >= std::max<int64_t>(1, v.rows)) {
    v.row_major = false;
    v.ld = std::max<int64_t>({sc, v.rows, 1});
  } else {
    throw nb::value_error((std::string(name) + " has strides (" + std::to_string(sr) + ", " + std::to_string(sc) +
                           ") for shape (" + std::to_string(v.rows) + ", " + std::to_string(v.cols) +
                           "): neither its rows nor its columns are contiguous (allowed: a row- or column-major "
                           "matrix, e.g. a transposed view; call .contiguous() first)")
                              .c_str());
  }
  v.stride = nd == 3 ? x.stride(0) : 0;
  if (nd == 3 && v.batch > 1 && v.stride <= 0) {
    throw nb::value_error((std::string(name) + " has batch stride " + std::to_string(v.stride) +
                           " (allowed: a positive stride; broadcast batches are not supported)").c_str());
  }
  return v;
}

std::string device_of(const char* name, int type, int id) {
  if (type == kDLCPU) return "cpu";
  if (type == kDLCUDA || type == kDLCUDAManaged) return "cuda:" + std::to_string(id);
  throw nb::value_error((std::string(name) + " is on DLPack device type " + std::to_string(type) +
                         " (allowed: CPU, CUDA)").c_str());
}

struct Settings {
  std::string profile;
  std::vector<std::pair<std::string, int64_t>> set;
  int threads = 0;
  std::string db;
  bool no_db = false;
  bool deterministic = true;
};

// The problem and options the three arrays describe; checks they agree (shapes, dtypes, one device).
std::pair<tf::Problem, tf::Options> describe(const Array& a, const Array& b, const Output& c, double alpha,
                                             double beta, const std::optional<std::string>& accum, uintptr_t stream,
                                             const Settings& s) {
  const View va = view_of("a", a), vb = view_of("b", b), vc = view_of("out", c);
  if (va.cols != vb.rows) {
    throw nb::value_error(("a is " + std::to_string(va.rows) + " x " + std::to_string(va.cols) + " and b is " +
                           std::to_string(vb.rows) + " x " + std::to_string(vb.cols) +
                           " (allowed: a's columns == b's rows)").c_str());
  }
  if (vc.rows != va.rows || vc.cols != vb.cols) {
    throw nb::value_error(("out is " + std::to_string(vc.rows) + " x " + std::to_string(vc.cols) + " (allowed: " +
                           std::to_string(va.rows) + " x " + std::to_string(vb.cols) + ", a's rows x b's columns)")
                              .c_str());
  }
  const int64_t batch = std::max({va.batch, vb.batch, vc.batch});
  for (auto [name, v] : {std::pair{"a", va}, std::pair{"b", vb}, std::pair{"out", vc}}) {
    if (v.batch != batch) {
      throw nb::value_error((std::string(name) + " holds " + std::to_string(v.batch) + " matrices (allowed: " +
                             std::to_string(batch) + ", as many as the others)").c_str());
    }
  }
  const std::string device = device_of("a", a.device_type(), a.device_id());
  for (auto [name, dev] : {std::pair{"b", device_of("b", b.device_type(), b.device_id())},
                           std::pair{"out", device_of("out", c.device_type(), c.device_id())}}) {
    if (dev != device) {
      throw nb::value_error((std::string(name) + " is on " + dev + " (allowed: " + device + ", where a is)").c_str());
    }
  }
  tf::Problem p;
  p.m = va.rows;
  p.n = vb.cols;
  p.k = va.cols;
  p.batch = batch;
  p.precision.input = dtype_of("a", a.dtype());
  if (dtype_of("b", b.dtype()) != p.precision.input) {
    throw nb::type_error("b's dtype differs from a's (allowed: the same dtype for a and b)");
  }
  p.precision.output = dtype_of("out", c.dtype());
  if (accum) {
    if (*accum == "f32" || *accum == "float32") p.precision.accum = tf::DType::f32;
    else if (*accum == "f16" || *accum == "float16") p.precision.accum = tf::DType::f16;
    else throw nb::value_error(("accum = '" + *accum + "' (allowed: 'f32', 'f16')").c_str());
  }
  p.layout = va.row_major ? (vb.row_major ? tf::Layout::RR : tf::Layout::RC)
                          : (vb.row_major ? tf::Layout::CR : tf::Layout::CC);
  p.c_order = vc.row_major ? tf::Order::row_major : tf::Order::col_major;
  p.lda = va.ld;
  p.ldb = vb.ld;
  p.ldc = vc.ld;
  if (batch > 1) {
    p.stride_a = va.stride;
    p.stride_b = vb.stride;
    p.stride_c = vc.stride;
  }
  p.alpha = alpha;
  p.beta = beta;
  tf::Options o;
  o.device = device;
  o.profile = s.profile;
  o.set = s.set;
  o.threads = s.threads;
  o.db = s.db;
  o.no_db = s.no_db;
  o.deterministic = s.deterministic;
  o.stream = reinterpret_cast<void*>(stream);
  return {p, o};
}

void gemm(const Array& a, const Array& b, Output& c, double alpha, double beta, std::optional<std::string> accum,
          uintptr_t stream, std::string profile, std::vector<std::pair<std::string, int64_t>> set, int threads,
          std::string db, bool no_db, bool deterministic) {
  auto [p, o] = describe(a, b, c, alpha, beta, accum, stream,
                         Settings{profile, set, threads, db, no_db, deterministic});
  tf::Status s;
  {
    nb::gil_scoped_release released;  // other Python threads run while the GEMM does
    s = tf::gemm(p, a.data(), b.data(), c.data(), o);
  }
  raise_if(s);
}

// A prepared GEMM: shapes, strides, dtypes and device fixed by the example arrays; run() on any arrays like them.
class Plan {
 public:
  Plan(const Array& a, const Array& b, const Output& c, double alpha, double beta, std::optional<std::string> accum,
       uintptr_t stream, std::string profile, std::vector<std::pair<std::string, int64_t>> set, int threads,
       std::string db, bool no_db, bool deterministic) {
    auto [p, o] = describe(a, b, c, alpha, beta, accum, stream,
                           Settings{profile, set, threads, db, no_db, deterministic});
    {
      nb::gil_scoped_release released;
      plan_ = tf::prepare(p, o);
    }
    raise_if(plan_.status());
  }

  void run(const Array& a, const Array& b, Output& c, uintptr_t stream) const {
    // The arrays must describe the problem the plan was made for.
    auto [p, o] = describe(a, b, c, plan_.problem().alpha, plan_.problem().beta, std::nullopt, stream, Settings{});
    const tf::Problem& q = plan_.problem();
    const tf::Problem pn = p.normalized(), qn = q.normalized();
    if (pn.m != qn.m || pn.n != qn.n || pn.k != qn.k || pn.batch != qn.batch || pn.layout != qn.layout ||
        pn.c_order != qn.c_order || pn.lda != qn.lda || pn.ldb != qn.ldb || pn.ldc != qn.ldc ||
        pn.stride_a != qn.stride_a || pn.stride_b != qn.stride_b || pn.stride_c != qn.stride_c ||
        pn.precision.input != qn.precision.input || pn.precision.output != qn.precision.output) {
      throw nb::value_error(("the arrays describe " + p.describe() + " (allowed: " + q.describe() +
                             ", what the plan was prepared for)").c_str());
    }
    tf::Status s;
    {
      nb::gil_scoped_release released;
      s = plan_.run(a.data(), b.data(), c.data(), reinterpret_cast<void*>(stream));
    }
    raise_if(s);
  }

  std::string config() const { return plan_.config().describe(); }
  std::string device() const { return plan_.device(); }
  std::string source() const { return plan_.source(); }
  std::string reason() const { return plan_.reason(); }
  std::vector<std::string> notes() const { return plan_.notes(); }
  std::size_t workspace_bytes() const { return plan_.workspace_bytes(); }

 private:
  tf::GemmPlan plan_;
};

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "tileforge's C++ API on DLPack arrays (use the tileforge package, not this module)";
  m.def("version", [] { return std::string(tf::version()); });
  nb::exception<UnsupportedError>(m, "Unsupported", PyExc_RuntimeError);
  m.def("gemm", &gemm, nb::arg("a"), nb::arg("b"), nb::arg("out"), nb::arg("alpha") = 1.0, nb::arg("beta") = 0.0,
        nb::arg("accum") = nb::none(), nb::arg("stream") = 0, nb::arg("profile") = "",
        nb::arg("set") = std::vector<std::pair<std::string, int64_t>>{}, nb::arg("threads") = 0, nb::arg("db") = "",
        nb::arg("no_db") = false, nb::arg("deterministic") = true,
        "out = alpha * a @ b + beta * out on the arrays' device, in place (see tileforge.gemm)");
  nb::class_<Plan>(m, "Plan")
      .def(nb::init<const Array&, const Array&, const Output&, double, double, std::optional<std::string>, uintptr_t,
                    std::string, std::vector<std::pair<std::string, int64_t>>, int, std::string, bool, bool>(),
           nb::arg("a"), nb::arg("b"), nb::arg("out"), nb::arg("alpha") = 1.0, nb::arg("beta") = 0.0,
           nb::arg("accum") = nb::none(), nb::arg("stream") = 0, nb::arg("profile") = "",
           nb::arg("set") = std::vector<std::pair<std::string, int64_t>>{}, nb::arg("threads") = 0,
           nb::arg("db") = "", nb::arg("no_db") = false, nb::arg("deterministic") = true)
      .def("run", &Plan::run, nb::arg("a"), nb::arg("b"), nb::arg("out"), nb::arg("stream") = 0)
      .def_prop_ro("config", &Plan::config)
      .def_prop_ro("device", &Plan::device)
      .def_prop_ro("source", &Plan::source)
      .def_prop_ro("reason", &Plan::reason)
      .def_prop_ro("notes", &Plan::notes)
      .def_prop_ro("workspace_bytes", &Plan::workspace_bytes);
}
