// Exported programs and the jaxpr parser: round trips through text and files, calls under jit, vmap
// and grad, the format version, bad texts and files. (Every conformance row is exported and reloaded
// in a fresh process by tests/io/rows/export_rows.cpp.)
#include <filesystem>
#include <fstream>

#include "graft/compiler/pipeline.h"
#include "graft/io/export.h"
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;
namespace fs = std::filesystem;

std::string tmp(const std::string& name) {
  auto d = fs::temp_directory_path() / ("graft_export_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

bool same_bits(const Array& a, const Array& b) {
  return a.aval().same_type(b.aval()) &&
         std::memcmp(a.concretize("test").raw_data(), b.concretize("test").raw_data(), a.nbytes()) == 0;
}

// The seeds' MLP with its weights captured: what the main job exports.
struct Mlp {
  Rng rng{7};
  Array w1 = rng.uniform({784, 64}) * 0.05, b1 = rng.uniform({64}) * 0.1;
  Array w2 = rng.uniform({64, 10}) * 0.1, b2 = rng.uniform({10}) * 0.1;
  Array operator()(const Array& x) const { return matmul(relu(matmul(x, w1) + b1), w2) + b2; }
};

TEST(Parse, RoundTripsTextExactly) {
  auto f = [](const Array& x, const Array& y) { return sum(sum(tanh(x) * y - 1.5, {0}) / 3.0); };
  ClosedJaxpr j = make_jaxpr(grad(f))(ones({2, 3}), ones({2, 3}));
  ClosedJaxpr back = parse_jaxpr(j.str());
  EXPECT_EQ(back.str(), j.str());
  std::string why;
  EXPECT_TRUE(same_program(j, back, &why)) << why;
}

TEST(Parse, ReadsLiteralsOfEveryDtypeBitForBit) {
  // extreme and awkward values: the shortest float that reads back, integer limits, -0.0, inf, nan
  for (auto [d, v] : std::vector<std::pair<DType, double>>{{f32, 0.1},
                                                           {f32, 3.4028234663852886e38},
                                                           {f32, 1.401298464324817e-45},
                                                           {f64, 0.1},
                                                           {f64, -0.0},
                                                           {f64, 5e-324},
                                                           {f64, -INFINITY},
                                                           {f16, 65504.0},
                                                           {bf16, 3.0e38},
                                                           {i8, -128},
                                                           {u8, 255},
                                                           {i32, -2147483648.0},
                                                           {u32, 4294967295.0},
                                                           {bool_, 1}}) {
    JaxprBuilder b;
    VarRef x = b.add_input(Aval({}, d));
    Array lit = Array::scalar(v, d);
    b.set_outputs({Atom(x), Atom::lit(lit)});
    ClosedJaxpr j = b.build();
    ClosedJaxpr back = parse_jaxpr(j.str());
    EXPECT_EQ(back.str(), j.str());
    EXPECT_TRUE(same_bits(back.jaxpr->outvars[1].literal, lit)) << j.str();
  }
  // 64-bit integers beyond doubles' 53 bits
  int64_t big = (int64_t(1) << 62) + 1;
  ClosedJaxpr j = parse_jaxpr("{ lambda ; . let  in (4611686018427387905:i64[], 18446744073709551615:u64[]) }");
  EXPECT_EQ(j.jaxpr->outvars[0].literal.item<int64_t>(), big);
  EXPECT_EQ(j.jaxpr->outvars[1].literal.item<uint64_t>(), UINT64_MAX);
}

// scan prints as JAX 0.11 does (flat-tree descriptors ft_in = (consts, carry, xs), ft_out = (carry, ys),
// the parameters sorted) and reads back to the same program: num_consts and num_carry come from ft_in.
TEST(Parse, ScanPrintsAsJax011AndRoundTrips) {
  FlatFn f = [](const std::vector<Array>& in) {
    Array w = in[0];  // closed over by the body: a const operand of scan
    return scan_flat([w](const std::vector<Array>& a) {
      return std::vector<Array>{a[0] + a[2] * w, a[1] * a[3], a[0] - a[3]};
    }, {in[1], in[2]}, {in[3], in[4]});
  };
  Aval v(Shape{2}, DType::f32), xs(Shape{3, 2}, DType::f32);
  ClosedJaxpr j = make_jaxpr_flat(f, {v, v, v, xs, xs});
  std::string text = j.str();
  EXPECT_NE(text.find("ft_in=((None,), (None, None), (None, None))"), std::string::npos) << text;
  EXPECT_NE(text.find("ft_out=((None, None), (RightsOnly(Right(None)),))"), std::string::npos) << text;
  EXPECT_NE(text.find("length=3"), std::string::npos) << text;
  EXPECT_NE(text.find("unroll=1"), std::string::npos) << text;
  EXPECT_EQ(text.find("num_carry"), std::string::npos) << text;
  ClosedJaxpr back = parse_jaxpr(text, jaxpr_constants(j));
  EXPECT_EQ(back.str(), text);
  std::string why;
  EXPECT_TRUE(same_program(j, back, &why)) << why;
  Rng rng(3);
  std::vector<Array> args{rng.uniform({2}), rng.uniform({2}), rng.uniform({2}), rng.uniform({3, 2}), rng.uniform({3, 2})};
  std::vector<Array> want = f(args);
  Arrays got = eval_jaxpr(back, args);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(close(got[k], want[k], 0, 0));
  // graft's older spelling (num_consts / num_carry) still reads, and ft_in must have its three groups
  std::string old = "{ lambda ; a:f32[] b:f32[2]. let c:f32[] d:f32[2] = scan[jaxpr={ lambda ; e:f32[] f:f32[]. let  "
                    "in (e, f) } length=2 num_carry=1 num_consts=0 reverse=False] a b in (c, d) }";
  EXPECT_EQ(parse_jaxpr(old).str(), parse_jaxpr(parse_jaxpr(old).str()).str());
  std::string bad = "{ lambda ; a:f32[] b:f32[2]. let c:f32[] d:f32[2] = scan[ft_in=((None,), (None,)) ft_out=((None,), "
                    "(RightsOnly(Right(None)),)) jaxpr={ lambda ; e:f32[] f:f32[]. let  in (e, f) } length=2 "
                    "reverse=False unroll=1] a b in (c, d) }";
  expect_throws<Error>([&] { (void)parse_jaxpr(bad); }, "ft_in must be (consts, carry, xs)");
}

TEST(Parse, TakesConstantsInTextOrderAndChecksThem) {
  Array c1 = array({1.0f, 2.0f, 3.0f}), c2 = array({10.0f, 20.0f, 30.0f});
  auto inner = jit([c2](const Array& x) { return x * c2; });
  auto f = [&](const Array& x) { return inner(x + c1); };
  ClosedJaxpr j = make_jaxpr(f)(ones({3}));
  std::vector<Array> consts = jaxpr_constants(j);
  ASSERT_EQ(consts.size(), 2u);
  ClosedJaxpr back = parse_jaxpr(j.str(), consts);
  EXPECT_TRUE(close(eval_jaxpr(back, std::vector<Array>{ones({3})})[0], f(ones({3}))));
  EXPECT_THROW(parse_jaxpr(j.str(), std::vector<Array>{c1}), ValueError);
  EXPECT_THROW(parse_jaxpr(j.str(), std::vector<Array>{c1, ones({4})}), ValueError);
  // without values, constants are zeros
  EXPECT_TRUE(close(eval_jaxpr(parse_jaxpr(j.str()), std::vector<Array>{ones({3})})[0], zeros({3})));
}

TEST(Parse, ReadsStructuredParameters) {
  // dot_general, conv, gather, scatter, pad, reduce_window, cond, while, scan, checkpoint, a string
  // parameter that needs quotes
  auto f = [](const Array& x, const Array& k) {
    Array y = lax::conv_general_dilated(x, k, {1, 1}, {{1, 1}, {1, 1}}, {1, 1}, {1, 1}, lax::ConvDims::nchw(2));
    Array z = lax::pad(y, array(0.0f), {{0, 0, 0}, {0, 0, 0}, {1, 2, 0}, {0, 1, 1}});
    Array g = take(reshape(z, {-1}), array({0, 5, 7}));
    Array s = reshape(z, {-1}).at({array({1, 2})}).add(array({1.0f, 2.0f}));
    Array c = cond(sum(g) > 0.0, [&] { return g * 2.0; }, [&] { return g - 1.0; });
    Array w = fori_loop(0, 3, [](const Array&, const Array& v) { return v * 0.5; }, c);
    auto [carry, ys] = scan([](const Array& h, const Array& xi) { return std::make_pair(h + xi, h * xi); },
                            array(0.0f), w);
    Array r = checkpoint([](const Array& v) { return sin(v) * 2.0; }, CheckpointPolicy::dots_saveable())(ys);
    Array named = checkpoint_name(r, "weird name (1)");
    return sum(named) + sum(s) + carry + sum(nn::max_pool2d(y, {2, 2}, std::array<int64_t, 2>{1, 1}));
  };
  Rng rng(3);
  Array x = rng.uniform({1, 2, 5, 5}), k = rng.uniform({3, 2, 3, 3});
  ClosedJaxpr j = make_jaxpr(f)(x, k);
  std::string text = golden(j);
  EXPECT_NE(text.find("name='weird name (1)'"), std::string::npos);
  ClosedJaxpr back = parse_jaxpr(text, jaxpr_constants(j));
  EXPECT_TRUE(same_bits(eval_jaxpr(back, std::vector<Array>{x, k})[0], f(x, k)));
  // and its derivative, whose jaxpr transposes all of these
  ClosedJaxpr gj = make_jaxpr(grad(f))(x, k);
  golden(gj);
}

TEST(Parse, NamesTheLineAndColumnOfBadText) {
  auto expect_error = [](const std::string& text, const std::string& part) {
    try {
      parse_jaxpr(text);
      ADD_FAILURE() << "no error for: " << text;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error("{ lambda ; a:f32[3]. let b:f32[3] = frobnicate a in (b,) }", "unknown primitive 'frobnicate'");
  expect_error("{ lambda ; a:f32[3]. let b:f32[3] = sin c in (b,) }", "variable 'c' is not defined");
  expect_error("{ lambda ; a:f33[3]. let  in (a,) }", "unknown dtype 'f33'");
  expect_error("{ lambda ; a:f32[3]. let b:f32[4] = sin a in (b,) }", "declared f32[4] but its rule gives f32[3]");
  expect_error("{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,)", "line 1, column 50: expected '}'");
  expect_error("{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n    c:f32[] = reduce_sum[axes=(0,] b\n  in (c,) }",
               "line 3, column");
  expect_error("{ lambda ; a:f32[3] a:f32[3]. let  in (a,) }", "defined twice");
  expect_error("{ lambda ; a:f32[]. let b:f32[] = add a 300:i8[] in (b,) }", "is not a int8 literal");
  expect_error("{ lambda ; a:f32[3]. let b:f32[] = reduce_sum[axes=GatherDimensionNumbers(x=1)] a in (b,) }",
               "parameter 'axes' of reduce_sum");
  expect_error("", "expected '{'");
  expect_error(std::string(5000, '(') , "expected '{'");
  std::string deep = "{ lambda ; a:f32[]. let b:f32[] = reduce_sum[axes=" + std::string(3000, '(') + "] a in (b,) }";
  expect_error(deep, "levels deep");
  // higher-order primitives with malformed parameters are errors, not crashes
  register_transform_primitives();
  for (const char* text : {
           "{ lambda ; a:f32[] b:i32[]. let c:f32[] = cond[branches=(\n)] b a in (c,) }",
           "{ lambda ; a:f32[] b:i32[]. let c:f32[] = cond[branches=(\n  None\n)] b a in (c,) }",
           "{ lambda ; a:f32[] b:i32[]. let c:f32[] = cond b a in (c,) }",
           "{ lambda ; a:f32[]. let b:f32[] = jit[jaxpr={ lambda ; c:f32[3]. let  in (c,) } name=f] a in (b,) }",
           "{ lambda ; a:f32[]. let b:f32[] = jit[name=f] a in (b,) }",
           "{ lambda ; a:f32[]. let b:f32[] = while[body_jaxpr={ lambda ; c:f32[]. let  in (c,) }] a in (b,) }",
           "{ lambda ; a:f32[2]. let b:f32[] c:f32[2] = scan[jaxpr={ lambda ; d:f32[] e:f32[]. let  in (d, e) } length=5 "
           "num_carry=1 num_consts=0 reverse=False] 1.0:f32[] a in (b,) }",
           "{ lambda ; a:f32[]. let b:f32[] = custom_jvp_call[num_consts=3] a in (b,) }",
           "{ lambda ; a:f32[]. let b:f32[] = fusion[jaxpr=None] a in (b,) }",
           "{ lambda ; a:f32[]. let b:f32[] = checkpoint[jaxpr={ lambda ; c:f32[]. let  in (c,) } policy=everything] a "
           "in (b,) }"}) {
    std::string t = text;
    for (size_t k; (k = t.find("\\n")) != std::string::npos;) t.replace(k, 2, "\n");
    try {
      parse_jaxpr(t);
      ADD_FAILURE() << "accepted: " << t;
    } catch (const Error&) {
    }
  }
}

TEST(Parse, MutatedTextsNeverCrashAndPrintStably) {
  // the fuzz target's property (fuzz/fuzz_jaxpr_text.cpp) over 20,000 mutations of real programs
  register_transform_primitives();
  auto f = [](const Array& x) {
    Array c = cond(sum(x) > 0.0, [&] { return x * 2.0; }, [&] { return x - 1.0; });
    auto [h, ys] = scan([](const Array& a, const Array& b) { return std::make_pair(a + b, a * b); }, array(0.0f), c);
    Array w = fori_loop(array(0), array(3), [](const Array&, const Array& v) { return v * 0.5; }, ys, {.max_steps = 3});
    Array k = checkpoint([](const Array& v) { return sin(v) * 2.0; })(w);
    return sum(jit([](const Array& v) { return exp(v); })(k)) + h;
  };
  std::vector<std::string> texts{make_jaxpr(f)(ones({4})).str(), make_jaxpr(grad(f))(ones({4})).str(),
                                 compiler::optimize(make_jaxpr(grad(f))(ones({4}))).str()};
  Rng rng(9);
  const std::string alphabet = "{}()[],;:=._ \n'abcdefxyzf32i64[]0123456789-";
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string t = texts[static_cast<size_t>(i) % texts.size()];
    int edits = static_cast<int>(rng.integer(1, 4));
    for (int e = 0; e < edits && !t.empty(); ++e) {
      size_t at = static_cast<size_t>(rng.integer(0, static_cast<int64_t>(t.size()) - 1));
      switch (rng.integer(0, 3)) {
        case 0: t[at] = alphabet[static_cast<size_t>(rng.integer(0, static_cast<int64_t>(alphabet.size()) - 1))]; break;
        case 1: t.erase(at, static_cast<size_t>(rng.integer(1, 8))); break;
        case 2: t.insert(at, t.substr(static_cast<size_t>(rng.integer(0, static_cast<int64_t>(at))), 6)); break;
        default: t.insert(at, 1, alphabet[static_cast<size_t>(rng.integer(0, static_cast<int64_t>(alphabet.size()) - 1))]);
      }
    }
    std::string printed;
    try {
      printed = parse_jaxpr(t, {}).str();
    } catch (const Error&) {
      continue;
    } catch (const std::exception& e) {
      FAIL() << "not a graft::Error: " << e.what() << "\n" << t;
    }
    ++parsed;
    ASSERT_EQ(parse_jaxpr(printed, {}).str(), printed) << "from:\n" << t;
  }
  EXPECT_GT(parsed, 0);
}

TEST(Export, SavesLoadsAndCallsBitForBit) {
  Mlp mlp;
  Array x = Rng(1).uniform({8, 784});
  auto predict = [&](const Array& xs) { return mlp(xs); };
  Exported e = export_fn(jit(predict), {.name = "predict", .in_names = {"images"}, .out_names = {"logits"}})(x);
  std::string path = tmp("mlp.graft");
  e.save(path);
  Exported m = load_exported(path);
  EXPECT_EQ(m.name(), "predict");
  EXPECT_EQ(m.in_names(), std::vector<std::string>{"images"});
  EXPECT_EQ(m.out_names(), std::vector<std::string>{"logits"});
  ASSERT_EQ(m.in_avals().size(), 1u);
  EXPECT_EQ(m.in_avals()[0].str(), "f32[8,784]");
  Array want = jit(predict)(x);
  EXPECT_TRUE(same_bits(m({x})[0], want));
  EXPECT_TRUE(same_bits(e({x})[0], want));
  // the weights travel as the file's constants (a safetensors file)
  io::Metadata meta;
  io::TensorMap t = io::load_tensors(path, &meta);
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(meta.at("graft.format_version"), std::to_string(kExportFormatVersion));
}

TEST(Export, LoadedProgramsComposeWithJitVmapAndGrad) {
  Mlp mlp;
  Array x = Rng(2).uniform({4, 784});
  Exported m = deserialize_exported(export_fn([&](const Array& xs) { return mlp(xs); })(x).serialize());
  auto loss_loaded = [&](const Array& xs) { return sum(square(m({xs})[0])); };
  auto loss = [&](const Array& xs) { return sum(square(mlp(xs))); };
  EXPECT_TRUE(close(grad(loss_loaded)(x), grad(loss)(x), 1e-5, 1e-6));
  EXPECT_TRUE(same_bits(jit(loss_loaded)(x), jit(loss)(x)));
  // vmap over a leading axis of 3 batches
  Array xs = Rng(3).uniform({3, 4, 784});
  Array v = vmap([&](const Array& b) { return m({b})[0]; })(xs);
  for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(close(v[i], mlp(xs[i]), 1e-5, 1e-6));
  // jvp through the loaded program
  auto [y, t] = jvp([&](const Array& a) { return m({a})[0]; }, {x}, {ones_like(x)});
  auto [y0, t0] = jvp([&](const Array& a) { return mlp(a); }, {x}, {ones_like(x)});
  EXPECT_TRUE(close(t, t0, 1e-5, 1e-5));
}

TEST(Export, WrongInputsAreTypeErrorsNamingTheInput) {
  Exported m = export_fn([](const Array& a, const Array& b) { return a * b; },
                         {.name = "mul", .in_names = {"a", "b"}})(ones({3}), ones({3}));
  try {
    m({ones({3}), ones({4})});
    ADD_FAILURE();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("input 1 (b) has type f32[4], the program was exported for f32[3]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(m({ones({3})}), ValueError);
}

TEST(Export, CustomRulesAreReplacedByTheirPrimalFunctions) {
  auto softplus = custom_jvp([](const Array& x) { return log1p(exp(x)); },
                             [](const std::vector<Array>& p, const std::vector<Array>& t) {
                               return std::make_pair(log1p(exp(p[0])), t[0] * lax::logistic(p[0]));
                             });
  Array x = array({-1.0, 0.5, 2.0});
  Exported m = deserialize_exported(export_fn([&](const Array& a) { return sum(softplus(a)); })(x).serialize());
  EXPECT_TRUE(same_bits(m({x})[0], sum(log1p(exp(x)))));
  EXPECT_TRUE(close(grad([&](const Array& a) { return m({a})[0]; })(x), lax::logistic(x), 1e-12, 1e-12));
  // a derivative traced before export keeps the custom rule: it ran while grad(f) was traced
  auto clip_grad = custom_vjp([](const Array& a) { return a; },
                              [](const std::vector<Array>& p) { return std::make_pair(p[0], std::vector<Array>{}); },
                              [](const std::vector<Array>&, const Array& ct) {
                                return std::vector<Array>{clip(ct, Array(-1.0), Array(1.0))};
                              });
  auto g = grad([&](const Array& a) { return sum(clip_grad(a) * array({5.0, 0.5, -3.0})); });
  Exported eg = deserialize_exported(export_fn(g)(x).serialize());
  EXPECT_TRUE(same_bits(eg({x})[0], array({1.0, 0.5, -1.0})));
}

TEST(Export, RecursiveFunctionsAreRefused) {
  Recursive fact("factorial", [](const Recursive& self, const std::vector<Array>& a) {
    return std::vector<Array>{cond(a[1] <= 1.0, [&] { return a[0]; }, [&] { return self(a[0] * a[1], a[1] - 1.0); })};
  });
  try {
    export_fn([&](const Array& r, const Array& x) { return fact(r, x); })(array(1.0f), array(3.0f));
    ADD_FAILURE();
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("factorial"), std::string::npos) << e.what();
  }
}

TEST(Export, FormatVersionsAndForeignFilesAreClearErrors) {
  Exported e = export_fn([](const Array& a) { return sin(a); })(ones({2}));
  io::Metadata meta;
  io::TensorMap t = io::load_tensors_from_bytes(e.serialize(), &meta);
  auto load_with = [&](const std::string& key, const std::string& value) {
    io::Metadata m = meta;
    if (value.empty()) {
      m.erase(key);
    } else {
      m[key] = value;
    }
    return deserialize_exported(io::tensors_to_bytes(t, m), "m.graft");
  };
  auto expect_io = [](const std::function<void()>& f, const std::string& part) {
    try {
      f();
      ADD_FAILURE() << "no error";
    } catch (const IOError& err) {
      EXPECT_NE(std::string(err.what()).find(part), std::string::npos) << err.what();
    }
  };
  expect_io([&] { load_with("graft.format_version", std::to_string(kExportFormatVersion + 1)); }, "by a newer graft");
  expect_io([&] { load_with("graft.format_version", "0"); }, "by an older graft");
  expect_io([&] { load_with("graft.format_version", "x1"); }, "is not a number");
  expect_io([&] { load_with("graft.format", ""); }, "not an exported graft program");
  expect_io([&] { load_with("graft.jaxpr", "{ lambda ; a:f32[2]. let b:f32[2] = sin in (b,) }"); },
            "its program does not read");
  expect_io([&] { load_with("graft.in_names", "[1]"); }, "is not a list of strings");
  expect_io([&] { deserialize_exported("garbage", "g.graft"); }, "g.graft");
  expect_io([&] { load_exported(tmp("missing.graft")); }, "missing.graft");
}

TEST(Export, TruncatedAndMutatedFilesNeverCrash) {
  Mlp mlp;
  std::string bytes = export_fn([&](const Array& x) { return mlp(x); })(ones({2, 784})).serialize();
  Rng rng(5);
  int loaded = 0;
  for (int i = 0; i < 400; ++i) {
    std::string b = bytes;
    if (i % 2) {
      b.resize(static_cast<size_t>(rng.integer(0, static_cast<int64_t>(b.size()) - 1)));
    } else {
      // mutate the header (where the program text is)
      for (int k = 0; k < 3; ++k) {
        size_t at = static_cast<size_t>(rng.integer(8, std::min<int64_t>(static_cast<int64_t>(b.size()) - 1, 6000)));
        b[at] = static_cast<char>(rng.integer(32, 126));
      }
    }
    try {
      Exported m = deserialize_exported(b);
      m({ones({2, 784})});
      ++loaded;
    } catch (const Error&) {
    }
  }
  EXPECT_LT(loaded, 400);
}

}  // namespace
}  // namespace graft
