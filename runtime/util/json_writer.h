// A thin layer over rapidjson's Writer for the JSON coupler prints (plans, status, workers):
// one call per field, so the printers read like the documents they produce.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace coupler::json {

class Writer {
 public:
  void BeginObject() { w_.StartObject(); }
  void EndObject() { w_.EndObject(); }
  void BeginArray(std::string_view key) {
    Key(key);
    w_.StartArray();
  }
  void BeginArray() { w_.StartArray(); }
  void EndArray() { w_.EndArray(); }
  void BeginObject(std::string_view key) {
    Key(key);
    w_.StartObject();
  }

  void Field(std::string_view key, std::string_view v) {
    Key(key);
    String(v);
  }
  void Field(std::string_view key, const char* v) { Field(key, std::string_view(v)); }
  void Field(std::string_view key, const std::string& v) { Field(key, std::string_view(v)); }
  void Field(std::string_view key, uint64_t v) {
    Key(key);
    w_.Uint64(v);
  }
  void Field(std::string_view key, uint32_t v) { Field(key, uint64_t{v}); }
  void Field(std::string_view key, int64_t v) {
    Key(key);
    w_.Int64(v);
  }
  void Field(std::string_view key, int v) { Field(key, int64_t{v}); }
  void Field(std::string_view key, double v) {
    Key(key);
    w_.Double(v);
  }
  void Field(std::string_view key, bool v) {
    Key(key);
    w_.Bool(v);
  }

  void Null(std::string_view key) {
    Key(key);
    w_.Null();
  }

  void Key(std::string_view k) { w_.Key(k.data(), static_cast<rapidjson::SizeType>(k.size())); }
  void String(std::string_view s) { w_.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }
  void Uint(uint64_t v) { w_.Uint64(v); }  // an array element

  // The document, newline-terminated.
  std::string Finish() const { return std::string(buf_.GetString(), buf_.GetSize()) + "\n"; }
  // The document so far, not terminated and not copied: valid until the next call.
  std::string_view View() const { return {buf_.GetString(), buf_.GetSize()}; }
  // Starts a new document in the same buffer: a writer reused for many small documents (the
  // event log's lines) allocates once rather than per document.
  void Clear() {
    buf_.Clear();
    w_.Reset(buf_);
  }

 private:
  rapidjson::StringBuffer buf_;
  rapidjson::Writer<rapidjson::StringBuffer> w_{buf_};
};

}  // namespace coupler::json
