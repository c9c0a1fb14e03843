// Fuzz target: the JSON body of a request to `meshlm serve` (infer/server.cpp: the body reader
// with its depth limit, request_fields.h's unknown-field check, the completion and chat options,
// the chat template over `messages`, /tokenize and /detokenize), sent with a well-formed head so
// that every mutation reaches the body. The first byte picks the endpoint; the rest is the body.
// A 500 answer or a crash is a finding (serve_fixture.h). Seeds: bodies of docs/serving.md and
// tests/serve_test.cpp.
#include <string>

#include "fuzz_util.h"
#include "serve_fixture.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const char* const paths[] = {"/v1/completions", "/v1/chat/completions", "/tokenize",
                                        "/detokenize"};
    if (size == 0) return 0;
    const std::string_view body = meshlm::fuzz::text(data + 1, size - 1);
    const std::string request = std::string("POST ") + paths[data[0] % 4] +
                                " HTTP/1.1\r\nHost: fuzz\r\nAuthorization: Bearer fuzz-key\r\n"
                                "Content-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
    meshlm::fuzz::guard([&] { meshlm::fuzz::serve_answer(request); });
    return 0;
}
