#include "runtime/io/npy_header.h"

#include <string>
#include <utility>

#include "runtime/io/py_literal.h"

namespace coupler::io {
namespace {

// What to tell a user whose file holds a type we do not read.
Status UnsupportedDescr(std::string_view what, std::string_view descr) {
  std::string message = std::string(what) + " has dtype '" + std::string(descr) + "'";
  if (!descr.empty() && descr[0] == '>') {
    return InvalidArgument(message +
                           ", which is big-endian; shards are little-endian: convert with "
                           "arr.astype(arr.dtype.newbyteorder('<'))");
  }
  return InvalidArgument(message + ", which is not supported; supported: <f4 (float32), "
                         "<i4 (int32), <i8 (int64), <f2 (float16), <u2 (bfloat16 bits), <f8 (float64), "
                         "|b1 (bool), <M8[ns] (datetime64[ns])");
}

Result<ElementType> ScalarDType(const PyValue& descr, std::string_view what) {
  if (descr.kind != PyValue::Kind::kString) {
    return InvalidArgument(std::string(what) + " has a " + std::string(PyKindName(descr.kind)) +
                           " dtype; only plain scalar types are supported");
  }
  const auto dtype = ElementTypeFromNpyDescr(descr.text);
  if (!dtype) return UnsupportedDescr(what, descr.text);
  return *dtype;
}

Status ParseFields(const PyValue& descr, NpyLayout& layout) {
  if (descr.items.empty()) return InvalidArgument("the structured dtype has no fields");
  for (const PyValue& field : descr.items) {
    if (field.kind != PyValue::Kind::kTuple || field.items.size() < 2) {
      return InvalidArgument("'descr' entries must be (name, type) tuples");
    }
    const PyValue& name = field.items[0];
    if (name.kind != PyValue::Kind::kString) {
      return InvalidArgument("a field name is a " + std::string(PyKindName(name.kind)) +
                             " (titled fields are not supported)");
    }
    const std::string what = "field '" + name.text + "'";
    if (name.text.empty()) {
      return InvalidArgument("a field has an empty name (padding bytes are not supported; "
                             "save a packed dtype)");
    }
    if (field.items.size() > 2) {
      return InvalidArgument(what + " has a sub-array shape; only scalar fields are supported");
    }
    for (const NpyField& seen : layout.fields) {
      if (seen.name == name.text) return InvalidArgument("duplicate " + what);
    }
    COUPLER_ASSIGN_OR_RETURN(const ElementType dtype, ScalarDType(field.items[1], what));
    layout.fields.push_back({name.text, dtype, layout.record_bytes});
    layout.record_bytes += ElementSize(dtype);
  }
  return Status::Ok();
}

Result<std::vector<uint64_t>> ParseShape(const PyValue& shape) {
  if (shape.kind != PyValue::Kind::kTuple) {
    return InvalidArgument("'shape' must be a tuple, got a " +
                           std::string(PyKindName(shape.kind)));
  }
  std::vector<uint64_t> dims;
  for (const PyValue& dim : shape.items) {
    if (dim.kind != PyValue::Kind::kInt || dim.integer < 0) {
      return InvalidArgument("'shape' must hold non-negative integers");
    }
    dims.push_back(static_cast<uint64_t>(dim.integer));
  }
  return dims;
}

}  // namespace

Result<NpyLayout> ParseNpyHeader(std::string_view header) {
  auto parsed = ParsePyLiteral(header);
  if (!parsed.ok()) return parsed.status().WithContext("bad header dict");
  const PyValue& dict = *parsed;
  if (dict.kind != PyValue::Kind::kDict) {
    return InvalidArgument("bad header: expected a dict, got a " +
                           std::string(PyKindName(dict.kind)));
  }
  for (const auto& [key, value] : dict.entries) {
    if (key != "descr" && key != "fortran_order" && key != "shape") {
      return InvalidArgument("bad header dict: unexpected key '" + key + "'");
    }
  }
  const PyValue* descr = dict.Get("descr");
  const PyValue* fortran_order = dict.Get("fortran_order");
  const PyValue* shape = dict.Get("shape");
  const std::pair<const char*, const PyValue*> required[] = {
      {"descr", descr}, {"fortran_order", fortran_order}, {"shape", shape}};
  for (const auto& [key, value] : required) {
    if (value == nullptr) {
      return InvalidArgument(std::string("bad header dict: no '") + key + "' key");
    }
  }
  if (fortran_order->kind != PyValue::Kind::kBool) {
    return InvalidArgument("bad header dict: 'fortran_order' must be True or False");
  }
  if (fortran_order->boolean) {
    return InvalidArgument("fortran_order is True, which is not supported; save a C-ordered "
                           "array (np.ascontiguousarray)");
  }
  COUPLER_ASSIGN_OR_RETURN(const std::vector<uint64_t> dims, ParseShape(*shape));

  NpyLayout layout;
  if (descr->kind == PyValue::Kind::kList) {
    layout.structured = true;
    COUPLER_RETURN_IF_ERROR(ParseFields(*descr, layout));
    if (dims.size() != 1) {
      return InvalidArgument("a structured array must be 1-D, this one has shape of " +
                             std::to_string(dims.size()) + " dimensions");
    }
    layout.rows = dims[0];
    return layout;
  }

  COUPLER_ASSIGN_OR_RETURN(const ElementType dtype, ScalarDType(*descr, "the array"));
  if (dims.empty() || dims.size() > 2) {
    return InvalidArgument("expected a 1-D structured array or a 1-D/2-D plain array, got " +
                           std::to_string(dims.size()) + " dimensions");
  }
  layout.rows = dims[0];
  const uint64_t columns = dims.size() == 2 ? dims[1] : 1;
  if (columns == 0) return InvalidArgument("the array has no columns (shape (" +
                                           std::to_string(dims[0]) + ", 0))");
  if (columns > kMaxNpyColumns) {
    return InvalidArgument("the array has " + std::to_string(columns) + " columns; at most " +
                           std::to_string(kMaxNpyColumns) + " are supported");
  }
  for (uint64_t c = 0; c < columns; ++c) {
    std::string name = "c";
    name += std::to_string(c);
    layout.fields.push_back({std::move(name), dtype, layout.record_bytes});
    layout.record_bytes += ElementSize(dtype);
  }
  return layout;
}

Result<std::string> EncodeNpyHeader(const Table& table) {
  if (table.num_columns() == 0) return InvalidArgument("a shard needs at least one column");
  COUPLER_RETURN_IF_ERROR(table.Validate());

  std::string dict = "{'descr': [";
  bool utf8 = false;
  for (size_t i = 0; i < table.num_columns(); ++i) {
    const Column& column = table.column(i);
    for (const char c : column.name()) utf8 |= static_cast<unsigned char>(c) >= 0x80;
    if (i > 0) dict += ", ";
    // Appends rather than "(" + ...: GCC 12 at -O3 warns falsely (-Wrestrict) on
    // literal + std::string.
    dict += '(';
    dict += PyRepr(column.name());
    dict += ", '";
    dict += NpyDescr(column.dtype());
    dict += "')";
  }
  dict += "], 'fortran_order': False, 'shape': (" + std::to_string(table.rows()) + ",), }";

  // numpy pads with spaces and ends with '\n' so the data starts on a 64-byte boundary.
  auto padded = [&dict](size_t preamble) {
    const size_t unpadded = preamble + dict.size() + 1;
    return dict.size() + 1 + (64 - unpadded % 64) % 64;
  };
  uint8_t major = utf8 ? 3 : 1;
  if (major == 1 && padded(kNpyPreambleV1) > 0xFFFF) major = 2;
  const size_t preamble = major == 1 ? kNpyPreambleV1 : kNpyPreambleV2;
  const size_t header_len = padded(preamble);
  if (header_len > kMaxNpyHeaderBytes) {
    return InvalidArgument("the header would be " + std::to_string(header_len) +
                           " bytes; too many or too long column names");
  }

  std::string out(kNpyMagic);
  out += static_cast<char>(major);
  out += '\0';
  const size_t length_bytes = preamble - kNpyMagic.size() - 2;
  for (size_t i = 0; i < length_bytes; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xFF);
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out += '\n';
  return out;
}

std::string EncodeArrayNpyHeader(ElementType dtype, uint64_t rows) {
  std::string dict = "{'descr': '" + std::string(NpyDescr(dtype)) +
                     "', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ",), }";
  const size_t unpadded = kNpyPreambleV1 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string out(kNpyMagic);
  out += static_cast<char>(1);
  out += '\0';
  out += static_cast<char>(dict.size() & 0xFF);  // well under 64 KiB: version 1.0
  out += static_cast<char>(dict.size() >> 8);
  out += dict;
  return out;
}

}  // namespace coupler::io
