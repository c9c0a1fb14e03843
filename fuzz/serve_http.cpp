// Fuzz target: one HTTP request to `meshlm serve` as raw bytes (infer/server.h Server::answer):
// the request line, headers (Content-Length, Authorization, Transfer-Encoding, ...), the body,
// routing, and the handlers of every endpoint. A 500 answer or a crash is a finding
// (serve_fixture.h). Seeds: requests of docs/serving.md and tests/serve_test.cpp, with and
// without the API key.
#include "fuzz_util.h"
#include "serve_fixture.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    meshlm::fuzz::guard([&] { meshlm::fuzz::serve_answer(meshlm::fuzz::text(data, size)); });
    return 0;
}
