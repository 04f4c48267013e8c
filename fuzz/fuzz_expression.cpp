// The expression language of scenario values and --fail-if gates.
#include "fuzz_pipeline.h"

#include <dreamscope/whatif/scenario.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dreamscope;
  static const whatif::ExpressionValues values = {
      {"speedup", 1.25}, {"workers", std::int64_t{4}}, {"storage", 2.0}, {"device", std::string("H100")},
      {"enabled", true}, {"amp.speedup", 1.5}};
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_clean([&] { (void)whatif::to_string(whatif::evaluate_expression(text, values)); });
  return 0;
}
