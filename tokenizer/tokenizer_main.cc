// specplan-tokenizer: trains a SentencePiece tokenizer and converts text to token ids and back, in
// a process of its own (libsentencepiece cannot share one with LibTorch: tokenizer.h).
//
//   specplan-tokenizer train  --input corpus.txt --model-prefix models/tok [--vocab-size 4096]
//   specplan-tokenizer encode --model tok.model --input prompts.txt --output prompts.jsonl
//   specplan-tokenizer encode --model tok.model --input corpus.txt --output corpus.ids --format ids
//   specplan-tokenizer decode --model tok.model --input out.jsonl
//
// encode reads one text per line (blank lines skipped). --format jsonl writes {"ids": [...]} per
// line, the prompts format of specplan-bench; --format ids writes every line's ids followed by
// the end-of-sequence id as little-endian int32, a token stream for training. decode reads
// {"ids": [...]} lines and prints one text per line. Outputs are written atomically.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/training.h"
#include "util/atomic_file.h"
#include "util/file.h"
#include "util/json_util.h"

namespace {

using specplan::planner::TokenId;
using specplan::tokenizer::Tokenizer;

int Fail(const absl::Status& st) {
  std::cerr << "specplan-tokenizer: " << st.message() << "\n";
  return 1;
}

absl::StatusOr<std::string> ReadInput(const std::string& path) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  return specplan::ReadFileToString(path);
}

absl::Status WriteOutput(const std::string& path, const std::string& data) {
  if (path == "-") {
    std::cout << data;
    return std::cout.good() ? absl::OkStatus() : absl::DataLossError("stdout: write failed");
  }
  return specplan::WriteFileAtomically(path, data);
}

int Encode(const std::string& model, const std::string& input, const std::string& output,
           const std::string& format, int64_t eos_id) {
  auto tok = Tokenizer::Load(model);
  if (!tok.ok()) return Fail(tok.status());
  auto text = ReadInput(input);
  if (!text.ok()) return Fail(text.status());
  std::string out;
  int64_t lines = 0, tokens = 0, line_no = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_no;
    if (line.empty()) continue;
    auto ids = (*tok)->Encode(std::string(line));
    if (!ids.ok()) {
      return Fail(absl::Status(ids.status().code(),
                               absl::StrCat(input, ":", line_no, ": ", ids.status().message())));
    }
    ++lines;
    tokens += static_cast<int64_t>(ids->size());
    if (format == "jsonl") {
      out += nlohmann::json{{"ids", *ids}}.dump() + "\n";
    } else {
      ids->push_back(static_cast<TokenId>(eos_id));
      for (TokenId id : *ids) {
        const uint32_t u = static_cast<uint32_t>(id);
        const char bytes[4] = {static_cast<char>(u & 0xff), static_cast<char>((u >> 8) & 0xff),
                               static_cast<char>((u >> 16) & 0xff),
                               static_cast<char>((u >> 24) & 0xff)};
        out.append(bytes, 4);
      }
    }
  }
  if (absl::Status st = WriteOutput(output, out); !st.ok()) return Fail(st);
  std::cerr << "specplan-tokenizer: encoded " << lines << " lines into " << tokens << " tokens ("
            << format << ", " << output << ")\n";
  return 0;
}

int Decode(const std::string& model, const std::string& input, const std::string& output) {
  auto tok = Tokenizer::Load(model);
  if (!tok.ok()) return Fail(tok.status());
  auto text = ReadInput(input);
  if (!text.ok()) return Fail(text.status());
  std::string out;
  int64_t line_no = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_no;
    if (line.empty()) continue;
    const std::string where = absl::StrCat(input, ":", line_no, ": ");
    auto parsed = specplan::json_util::ParseJson(std::string_view(line.data(), line.size()), input,
                                                 static_cast<size_t>(line_no));
    if (!parsed.ok()) return Fail(parsed.status());
    nlohmann::json j = *std::move(parsed);
    if (!j.is_object() || !j.contains("ids") || !j["ids"].is_array()) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(where, "expected {\"ids\": [...]}")));
    }
    std::vector<TokenId> ids;
    for (size_t i = 0; i < j["ids"].size(); ++i) {
      const nlohmann::json& v = j["ids"][i];
      if (!v.is_number_integer()) {
        return Fail(absl::InvalidArgumentError(absl::StrCat(
            where, "ids[", i, "] = ", specplan::json_util::Quote(v), ": expected an integer")));
      }
      ids.push_back(v.get<TokenId>());
    }
    auto decoded = (*tok)->Decode(ids);
    if (!decoded.ok()) {
      return Fail(
          absl::Status(decoded.status().code(), absl::StrCat(where, decoded.status().message())));
    }
    out += *decoded + "\n";
  }
  if (absl::Status st = WriteOutput(output, out); !st.ok()) return Fail(st);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "specplan-tokenizer: train a SentencePiece tokenizer, and convert text to token ids "
      "(specplan-bench prompts, training streams) and back"};
  app.require_subcommand(1);
  int exit_code = 0;

  specplan::tokenizer::TokenizerTrainOptions train;
  CLI::App* t = app.add_subcommand("train", "Train a tokenizer on a text file (one text per line)");
  t->add_option("--input", train.input, "UTF-8 text, one sentence or paragraph per line")
      ->required();
  t->add_option("--model-prefix", train.model_prefix, "Writes <prefix>.model and <prefix>.vocab")
      ->required();
  t->add_option("--vocab-size", train.vocab_size, "Pieces, 256 byte pieces and specials included")
      ->capture_default_str();
  t->add_option("--model-type", train.model_type, "unigram | bpe")->capture_default_str();
  t->add_option("--threads", train.threads,
                "Trainer threads (1 gives the same vocabulary for the same corpus every time)")
      ->capture_default_str();
  t->callback([&] {
    const absl::Status st = specplan::tokenizer::TrainTokenizer(train);
    if (!st.ok()) {
      exit_code = Fail(st);
      return;
    }
    std::cerr << "specplan-tokenizer: wrote " << train.model_prefix << ".model and "
              << train.model_prefix << ".vocab\n";
  });

  std::string model, input = "-", output = "-", format = "jsonl";
  int64_t eos_id = 2;
  CLI::App* e = app.add_subcommand("encode", "Text lines to token ids");
  e->add_option("--model", model, "Tokenizer .model file")->required();
  e->add_option("--input", input, "Text, one per line ('-' = stdin)")->capture_default_str();
  e->add_option("--output", output, "Where to write ('-' = stdout)")->capture_default_str();
  e->add_option("--format", format,
                "jsonl: {\"ids\": [...]} per line (specplan-bench --prompts); ids: little-endian "
                "int32 stream, each line followed by --eos-id")
      ->check(CLI::IsMember({"jsonl", "ids"}))
      ->capture_default_str();
  e->add_option("--eos-id", eos_id, "End-of-sequence id after each line (--format ids)")
      ->capture_default_str();
  e->callback([&] { exit_code = Encode(model, input, output, format, eos_id); });

  CLI::App* d = app.add_subcommand("decode", "{\"ids\": [...]} lines back to text");
  d->add_option("--model", model, "Tokenizer .model file")->required();
  d->add_option("--input", input, "{\"ids\": [...]} per line ('-' = stdin)")->capture_default_str();
  d->add_option("--output", output, "Where to write ('-' = stdout)")->capture_default_str();
  d->callback([&] { exit_code = Decode(model, input, output); });

  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
