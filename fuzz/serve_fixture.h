// The server the serve_http and serve_body fuzz targets talk to: `meshlm serve`'s Server over a
// running Engine of a tiny random model (byte tokenizer, context 32), created once per process
// and never bound to a port; requests go in as bytes (Server::answer).
//
// The oracle: a request may be refused (4xx) or answered (200), never met with a 500 (an
// exception other than the server's ApiError escaped a handler) or a crash.
#pragma once

#include <string>
#include <string_view>

namespace meshlm::fuzz {

// Answers raw HTTP request bytes; aborts (a finding) on a 500 answer, printing it.
std::string serve_answer(std::string_view request);

}  // namespace meshlm::fuzz
