#include "graft/io/npy.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "graft/core/error.h"
#include "graft/io/nesting.h"
#include "graft/prims/lax.h"

namespace graft::io {

namespace {

// ---- .npy ------------------------------------------------------------------------------------------
constexpr char kMagic[] = "\x93NUMPY";

// NumPy's type string for d ('<f4', '|u1', ...); bfloat16 has none.
std::string descr_of(DType d) {
  switch (d) {
    case DType::bool_: return "|b1";
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::i16: return "<i2";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::u16: return "<u2";
    case DType::u32: return "<u4";
    case DType::u64: return "<u8";
    case DType::f16: return "<f2";
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::c64: return "<c8";
    case DType::c128: return "<c16";
    default: break;
  }
  fail<TypeError>("save_npy: NumPy has no ", d, " type; cast the array (e.g. to float32) first");
}

// The dtype of a type string, and whether its bytes are big-endian.
DType dtype_of_descr(const std::string& descr, bool* big, const std::string& name) {
  if (descr.size() < 3) fail<IOError>("'", name, "': the dtype '", descr, "' is not one of NumPy's type strings");
  char order = descr[0], kind = descr[1];
  std::string size = descr.substr(2);
  if (order != '<' && order != '>' && order != '|' && order != '=')
    fail<IOError>("'", name, "': the dtype '", descr, "' has no byte order");
  *big = order == '>';
  struct Known {
    char kind;
    const char* size;
    DType d;
  };
  static const Known known[] = {{'b', "1", DType::bool_}, {'i', "1", DType::i8},  {'i', "2", DType::i16},
                                {'i', "4", DType::i32},   {'i', "8", DType::i64}, {'u', "1", DType::u8},
                                {'u', "2", DType::u16},   {'u', "4", DType::u32}, {'u', "8", DType::u64},
                                {'f', "2", DType::f16},   {'f', "4", DType::f32}, {'f', "8", DType::f64},
                                {'c', "8", DType::c64},   {'c', "16", DType::c128}};
  for (const Known& k : known)
    if (k.kind == kind && size == k.size) return k.d;
  fail<TypeError>("'", name, "': NumPy's dtype '", descr, "' has no graft type (graft reads bool, int, uint, float and complex)");
}

// The value of `key` in the header's dict literal, as its raw text (a quoted string, True/False, or a
// parenthesized tuple).
std::string header_value(const std::string& h, const std::string& key, const std::string& name) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) fail<IOError>("'", name, "': the header has no '", key, "' (", h, ")");
  size_t colon = h.find(':', k);
  if (colon == std::string::npos) fail<IOError>("'", name, "': the header's '", key, "' has no value");
  size_t v = h.find_first_not_of(" ", colon + 1);
  if (v == std::string::npos) fail<IOError>("'", name, "': the header's '", key, "' has no value");
  size_t end;
  if (h[v] == '\'' || h[v] == '"') {
    end = h.find(h[v], v + 1);
    if (end == std::string::npos) fail<IOError>("'", name, "': an unterminated string in the header");
    return h.substr(v + 1, end - v - 1);
  }
  if (h[v] == '(') {
    end = h.find(')', v);
    if (end == std::string::npos) fail<IOError>("'", name, "': an unterminated shape in the header");
    return h.substr(v, end - v + 1);
  }
  end = h.find_first_of(",}", v);
  if (end == std::string::npos) fail<IOError>("'", name, "': a header value runs past the end");
  std::string s = h.substr(v, end - v);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

Shape parse_shape(const std::string& t, const std::string& name) {
  Shape s;
  size_t i = 1;  // past '('
  while (i < t.size()) {
    while (i < t.size() && (t[i] == ' ' || t[i] == ',')) ++i;
    if (i >= t.size() || t[i] == ')') break;
    if (t[i] < '0' || t[i] > '9') fail<IOError>("'", name, "': the shape ", t, " is not a tuple of sizes");
    int64_t v = 0;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) fail<IOError>("'", name, "': a dimension of ", t, " is too large");
      v = v * 10 + (t[i++] - '0');
    }
    s.push_back(v);
    if (s.size() > 64) fail<IOError>("'", name, "': the shape ", t, " has too many dimensions");
  }
  return s;
}

uint32_t read_le(const std::string& b, size_t at, int bytes) {
  uint32_t v = 0;
  for (int k = bytes; k-- > 0;) v = v << 8 | static_cast<unsigned char>(b[at + static_cast<size_t>(k)]);
  return v;
}

void put_le(std::string& b, uint64_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) b.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
}

// ---- .npz (zip) -------------------------------------------------------------------------------------
constexpr uint32_t kLocal = 0x04034b50, kCentral = 0x02014b50, kEnd = 0x06054b50;

uint64_t read_le64(const std::string& b, size_t at) {
  return static_cast<uint64_t>(read_le(b, at, 4)) | static_cast<uint64_t>(read_le(b, at + 4, 4)) << 32;
}

std::string inflate_raw(const std::string& in, uint64_t out_size, const std::string& what) {
  if (out_size > (uint64_t{1} << 40)) fail<IOError>(what, ": an uncompressed size of ", out_size, " bytes");
  std::string out(static_cast<size_t>(out_size), '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail<IOError>(what, ": cannot start zlib");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(std::min<size_t>(in.size(), std::numeric_limits<uInt>::max()));
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(std::min<size_t>(out.size(), std::numeric_limits<uInt>::max()));
  int r = inflate(&z, Z_FINISH);
  size_t produced = out.size() - z.avail_out;
  inflateEnd(&z);
  if (r != Z_STREAM_END || produced != out.size())
    fail<IOError>(what, ": the deflated data is corrupt or does not have its stated size");
  return out;
}

}  // namespace

std::string npy_bytes(const Array& x) {
  if (!x.is_concrete()) fail<ValueError>("save_npy: the array is traced (", x.aval().str(), "); save concrete values");
  std::string shape = "(";
  for (size_t i = 0; i < x.shape().size(); ++i) shape += std::to_string(x.shape()[i]) + (x.ndim() == 1 ? "," : i + 1 < x.shape().size() ? ", " : "");
  shape += ")";
  std::string header = "{'descr': '" + descr_of(x.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // version 1.0 holds a header of up to 65535 bytes; the data starts at a multiple of 64
  bool v2 = header.size() + 1 + 10 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header.push_back('\n');
  std::string out(kMagic, 6);
  out.push_back(static_cast<char>(v2 ? 2 : 1));
  out.push_back(0);
  put_le(out, header.size(), v2 ? 4 : 2);
  out += header;
  out.append(static_cast<const char*>(x.raw_data()), x.nbytes());
  return out;
}

constexpr int kMaxHeaderDepth = 4;

Array parse_npy(const std::string& b, const std::string& name) {
  if (b.size() < 10 || b.compare(0, 6, kMagic, 6) != 0) fail<IOError>("'", name, "' is not a .npy file (no \\x93NUMPY magic)");
  int major = static_cast<unsigned char>(b[6]);
  if (major < 1 || major > 3) fail<IOError>("'", name, "': .npy format version ", major, " (graft reads 1.0 to 3.0)");
  size_t prefix = major == 1 ? 10 : 12;
  if (b.size() < prefix) fail<IOError>("'", name, "': the file ends inside its preamble");
  size_t hlen = read_le(b, 8, major == 1 ? 2 : 4);
  if (hlen > b.size() - prefix) fail<IOError>("'", name, "': the header (", hlen, " bytes) runs past the end of the file");
  std::string h = b.substr(prefix, hlen);
  // a header is a dict holding a shape tuple: two levels (structured dtypes, which graft does not
  // read, add two more)
  if (nesting_depth(h, kMaxHeaderDepth) > kMaxHeaderDepth)
    fail<IOError>("'", name, "': the header nests more than ", kMaxHeaderDepth, " levels deep");
  bool big = false;
  DType d = dtype_of_descr(header_value(h, "descr", name), &big, name);
  std::string fo = header_value(h, "fortran_order", name);
  if (fo != "True" && fo != "False") fail<IOError>("'", name, "': fortran_order is '", fo, "'");
  Shape shape = parse_shape(header_value(h, "shape", name), name);
  int64_t n = 0;
  try {
    n = checked_numel(shape, "load_npy");
  } catch (const Error& e) {
    fail<IOError>("'", name, "': ", e.what());
  }
  size_t isz = itemsize(d), data = prefix + hlen;
  if (static_cast<uint64_t>(n) > (b.size() - data) / isz)
    fail<IOError>("'", name, "': ", Aval(shape, d).str(), " needs ", static_cast<uint64_t>(n) * isz, " bytes of data, the file has ",
                  b.size() - data);
  // a Fortran-ordered array is the C-ordered array of the reversed shape, transposed
  bool fortran = fo == "True" && shape.size() > 1 && n > 0;  // an empty array has no order to undo
  Shape stored = shape;
  if (fortran) std::reverse(stored.begin(), stored.end());
  Array out = Array::empty(Aval(stored, d));
  char* dst = static_cast<char*>(out.concrete()->data());
  if (n > 0) std::memcpy(dst, b.data() + data, static_cast<size_t>(n) * isz);
  if (big && isz > 1) {
    // a complex number is two floats, each byte-swapped on its own
    int64_t w = static_cast<int64_t>(itemsize(real_dtype(d))), parts = n * static_cast<int64_t>(isz) / w;
    for (int64_t e = 0; e < parts; ++e) std::reverse(dst + e * w, dst + (e + 1) * w);
  }
  if (d == DType::bool_)
    for (int64_t e = 0; e < n; ++e) dst[e] = dst[e] != 0;  // any nonzero byte is true
  if (fortran) {
    Axes rev;
    for (int64_t k = static_cast<int64_t>(shape.size()); k-- > 0;) rev.push_back(k);
    return lax::transpose(out, rev);
  }
  return out;
}

void save_npy(const std::string& path, const Array& x) { write_file_atomic(path, npy_bytes(x)); }
Array load_npy(const std::string& path) { return parse_npy(read_file(path), path); }

std::string npz_bytes(const TensorMap& arrays) {
  std::string out, central;
  uint16_t count = 0;
  for (auto& [key, x] : arrays) {
    if (arrays.size() > 65535) fail<ValueError>("save_npz: more than 65535 arrays");
    std::string member = key + ".npy", data = npy_bytes(x);
    if (data.size() >= 0xffffffffu || out.size() >= 0xffffffffu)
      fail<ValueError>("save_npz: ", key, " makes the archive larger than 4 GiB (graft writes zip without zip64)");
    uint32_t crc = static_cast<uint32_t>(crc32_z(0L, reinterpret_cast<const Bytef*>(data.data()), data.size()));
    uint32_t offset = static_cast<uint32_t>(out.size());
    // local header: version 20, no flags, stored, no time, crc, sizes, name
    put_le(out, kLocal, 4);
    put_le(out, 20, 2);
    put_le(out, 0, 2);
    put_le(out, 0, 2);
    put_le(out, 0, 4);
    put_le(out, crc, 4);
    put_le(out, data.size(), 4);
    put_le(out, data.size(), 4);
    put_le(out, member.size(), 2);
    put_le(out, 0, 2);
    out += member;
    out += data;
    put_le(central, kCentral, 4);
    put_le(central, 20, 2);
    put_le(central, 20, 2);
    put_le(central, 0, 2);
    put_le(central, 0, 2);
    put_le(central, 0, 4);
    put_le(central, crc, 4);
    put_le(central, data.size(), 4);
    put_le(central, data.size(), 4);
    put_le(central, member.size(), 2);
    put_le(central, 0, 2);
    put_le(central, 0, 2);
    put_le(central, 0, 2);
    put_le(central, 0, 2);
    put_le(central, 0, 4);
    put_le(central, offset, 4);
    central += member;
    ++count;
  }
  uint32_t cd_offset = static_cast<uint32_t>(out.size());
  out += central;
  put_le(out, kEnd, 4);
  put_le(out, 0, 2);
  put_le(out, 0, 2);
  put_le(out, count, 2);
  put_le(out, count, 2);
  put_le(out, central.size(), 4);
  put_le(out, cd_offset, 4);
  put_le(out, 0, 2);
  return out;
}

TensorMap parse_npz(const std::string& b, const std::string& name) {
  // the end-of-central-directory record: the last one in the final 64 KiB + 22 bytes
  if (b.size() < 22) fail<IOError>("'", name, "' is not a .npz file (too short for a zip archive)");
  size_t eocd = std::string::npos;
  size_t lowest = b.size() > 65535 + 22 ? b.size() - 65535 - 22 : 0;
  for (size_t p = b.size() - 22 + 1; p-- > lowest;)
    if (read_le(b, p, 4) == kEnd) {
      eocd = p;
      break;
    }
  if (eocd == std::string::npos) fail<IOError>("'", name, "' is not a .npz file (no zip directory)");
  uint64_t entries = read_le(b, eocd + 10, 2), cd_size = read_le(b, eocd + 12, 4), cd = read_le(b, eocd + 16, 4);
  if (cd > b.size() || cd_size > b.size() - cd)
    fail<IOError>("'", name, "': the zip directory lies outside the file");
  TensorMap out;
  size_t p = static_cast<size_t>(cd);
  for (uint64_t e = 0; e < entries; ++e) {
    if (p + 46 > b.size() || read_le(b, p, 4) != kCentral) fail<IOError>("'", name, "': zip directory entry ", e, " is corrupt");
    uint32_t method = read_le(b, p + 10, 2), crc = read_le(b, p + 16, 4);
    uint64_t csize = read_le(b, p + 20, 4), usize = read_le(b, p + 24, 4), local = read_le(b, p + 42, 4);
    size_t nlen = read_le(b, p + 28, 2), xlen = read_le(b, p + 30, 2), clen = read_le(b, p + 32, 2);
    if (p + 46 + nlen + xlen + clen > b.size()) fail<IOError>("'", name, "': zip directory entry ", e, " runs past the end");
    std::string member = b.substr(p + 46, nlen);
    // zip64: the sizes and offset that do not fit 32 bits follow in extra field 0x0001, in this order
    for (size_t x = p + 46 + nlen; x + 4 <= p + 46 + nlen + xlen;) {
      uint32_t id = read_le(b, x, 2), len = read_le(b, x + 2, 2);
      if (x + 4 + len > p + 46 + nlen + xlen) break;
      if (id == 1) {
        size_t q = x + 4;
        auto next = [&](uint64_t& v) {
          if (v == 0xffffffffu && q + 8 <= x + 4 + len) {
            v = read_le64(b, q);
            q += 8;
          }
        };
        next(usize);
        next(csize);
        next(local);
      }
      x += 4 + len;
    }
    p += 46 + nlen + xlen + clen;
    std::string what = "'" + name + "', member '" + member + "'";
    if (local > b.size() || b.size() - local < 30 || read_le(b, static_cast<size_t>(local), 4) != kLocal)
      fail<IOError>(what, ": its local header is missing");
    size_t start = static_cast<size_t>(local) + 30 + read_le(b, static_cast<size_t>(local) + 26, 2) +
                   read_le(b, static_cast<size_t>(local) + 28, 2);
    if (start > b.size() || csize > b.size() - start) fail<IOError>(what, ": its data runs past the end of the file");
    std::string raw = b.substr(start, static_cast<size_t>(csize));
    std::string data;
    if (method == 0) {
      if (csize != usize) fail<IOError>(what, ": stored with two different sizes");
      data = std::move(raw);
    } else if (method == 8) {
      // deflate expands at most ~1032:1: a larger stated size is a corrupt (or hostile) file
      if (usize / 1032 > csize + 1)
        fail<IOError>(what, ": ", csize, " deflated bytes cannot hold the stated ", usize);
      data = inflate_raw(raw, usize, what);
    } else {
      fail<IOError>(what, ": zip compression method ", method, " (graft reads stored and deflated members)");
    }
    uint32_t got = static_cast<uint32_t>(crc32_z(0L, reinterpret_cast<const Bytef*>(data.data()), data.size()));
    if (got != crc) fail<IOError>(what, ": its CRC-32 does not match (the file is corrupt)");
    std::string key = member.size() > 4 && member.compare(member.size() - 4, 4, ".npy") == 0
                          ? member.substr(0, member.size() - 4)
                          : member;
    out[key] = parse_npy(data, name + ":" + member);
  }
  return out;
}

void save_npz(const std::string& path, const TensorMap& arrays) { write_file_atomic(path, npz_bytes(arrays)); }
TensorMap load_npz(const std::string& path) { return parse_npz(read_file(path), path); }

}  // namespace graft::io
