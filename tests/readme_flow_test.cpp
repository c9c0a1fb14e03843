// The documentation's commands, run, so the docs cannot go stale.
//
// 1. Every fenced ```bash / ```sh block of README.md and docs/*.md is read from the files (the
//    tests follow the text) and run by bash, block after block, in a scratch directory: README.md
//    first, then each docs page in a directory of its own that starts with a copy of the README's
//    `runs/default`. `build/meshlm` becomes the built binary, `configs/` and `tests/` are the
//    source tree's, and HOME is the scratch directory (the data cache goes there). A block whose
//    command fails fails the test. Every `meshlm` command of every block, run or not, must use
//    flags its subcommand has and config keys that exist, and README.md's tour must show every
//    subcommand `meshlm --help` lists.
//
//    A line is run when it starts with `build/meshlm`, `echo` or `curl`, or is a shell variable
//    assignment; any other line (mpirun, scripts, benchmarks) must be marked as not run. Markers
//    are HTML comments on the lines right above the fence, one per line:
//
//      <!-- test: skip REASON -->                the block is not run (REASON: a GPU, many
//                                                ranks, the network, hours, or the test that
//                                                runs it)
//      <!-- test: skip-line PREFIX (REASON) -->  lines starting with PREFIX are not run
//      <!-- test: append SUBCOMMAND ARGS -->     ARGS added to every `build/meshlm SUBCOMMAND`
//                                                line (fewer steps: the last value wins)
//      <!-- test: replace FROM => TO -->         text replaced in the block's lines; {port} in
//                                                TO is a free TCP port
//      <!-- test: file NAME CONTENT -->          NAME written first (\n in CONTENT: a newline)
//      <!-- test: background PREFIX -->          a line starting with PREFIX (a server) runs in
//                                                the background until the block ends; the next
//                                                line waits for its /health on that port
//
// 2. The prepare -> train -> eval sequence of docs/tokenizers-and-data.md with the inputs it
//    expects: a JSONL corpus and a tokenizer.json. The run directory keeps a byte-identical copy
//    of the tokenizer, which must count as the same tokenizer as the one the data was prepared
//    with.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

// The markdown files whose command blocks are run: README.md, then docs/*.md in name order.
std::vector<std::string> doc_files() {
    std::vector<std::string> docs;
    for (const auto& e : fs::directory_iterator(test::source_dir() + "/docs"))
        if (e.path().extension() == ".md") docs.push_back("docs/" + e.path().filename().string());
    std::sort(docs.begin(), docs.end());
    docs.insert(docs.begin(), "README.md");
    return docs;
}

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    if (from.empty()) return s;
    for (std::size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size())
        s.replace(p, from.size(), to);
    return s;
}

// A shell-quoted word.
std::string shell_quoted(const std::string& s) {
    std::string out = "'";
    for (const char c : s) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    out += '\'';
    return out;
}

// A fenced code block: its language, the line of its fence, the `<!-- test: ... -->` markers
// right above it, and its lines with `\` continuations joined.
struct Block {
    std::string file, lang;
    int line = 0;
    std::vector<std::string> markers, lines;
    std::string where() const { return file + ":" + std::to_string(line); }
    bool shell() const { return lang == "bash" || lang == "sh"; }
};

std::vector<Block> doc_blocks(const std::string& file) {
    std::istringstream in(test::read_file(test::source_dir() + "/" + file));
    std::vector<Block> blocks;
    std::vector<std::string> markers;
    std::string indent;
    bool inside = false;
    int n = 0;
    for (std::string line; std::getline(in, line);) {
        ++n;
        const std::string t = trim(line);
        if (t.starts_with("```")) {
            if (!inside) {
                Block b;
                b.file = file;
                b.lang = t.substr(3);
                b.line = n;
                b.markers = markers;
                blocks.push_back(b);
                indent = line.substr(0, line.find('`'));
            }
            inside = !inside;
            markers.clear();
            continue;
        }
        if (!inside) {
            if (t.starts_with("<!-- test:") && t.ends_with("-->"))
                markers.push_back(trim(t.substr(10, t.size() - 13)));
            else
                markers.clear();
            continue;
        }
        if (line.starts_with(indent)) line = line.substr(indent.size());
        auto& lines = blocks.back().lines;
        if (!lines.empty() && lines.back().ends_with("\\")) {
            lines.back().pop_back();
            lines.back() = trim(lines.back()) + " " + trim(line);
        } else {
            lines.push_back(line);
        }
    }
    return blocks;
}

// The lines of the documentation's fenced block that contains `marker`.
std::vector<std::string> doc_block(const std::string& marker) {
    for (const auto& file : doc_files())
        for (const Block& b : doc_blocks(file)) {
            std::string all;
            for (const auto& l : b.lines) all += l + "\n";
            if (all.find(marker) != std::string::npos) return b.lines;
        }
    return {};
}

// The line without a trailing `# comment` (a # that starts a word outside quotes).
std::string strip_comment(const std::string& line) {
    char quote = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quote) {
            if (c == '\\' && quote == '"')
                ++i;
            else if (c == quote)
                quote = 0;
        } else if (c == '\\') {
            ++i;
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
            return trim(line.substr(0, i));
        }
    }
    return trim(line);
}

// The words of a command line, quotes removed (enough to find commands and flags).
std::vector<std::string> words(const std::string& line) {
    std::vector<std::string> out;
    std::string cur;
    bool have = false;
    char quote = 0;
    for (const char c : line) {
        if (quote) {
            if (c == quote)
                quote = 0;
            else
                cur += c;
        } else if (c == '\'' || c == '"') {
            quote = c;
            have = true;
        } else if (c == ' ' || c == '\t') {
            if (have) out.push_back(cur);
            cur.clear();
            have = false;
        } else {
            cur += c;
            have = true;
        }
    }
    if (have) out.push_back(cur);
    return out;
}

int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    int port = 0;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

// The bash script that runs a block in `dir`, or "" when none of it runs; problems (an unknown
// marker, a line neither run nor marked) are added to `errors`.
std::string block_script(const Block& b, const std::string& dir, std::vector<std::string>& errors) {
    std::vector<std::pair<std::string, std::string>> skip_lines, replaces, appends;
    std::vector<std::string> backgrounds;
    std::string files;
    const int port = free_port();
    for (const std::string& m : b.markers) {
        const auto sp = m.find(' ');
        const std::string kind = m.substr(0, sp);
        const std::string rest = sp == std::string::npos ? "" : trim(m.substr(sp));
        if (kind == "skip") {
            if (rest.empty()) errors.push_back(b.where() + ": `test: skip` needs a reason");
            return "";
        } else if (kind == "skip-line") {
            const auto paren = rest.find(" (");
            if (paren == std::string::npos || !rest.ends_with(")"))
                errors.push_back(b.where() + ": not `test: skip-line PREFIX (REASON)`: " + m);
            else
                skip_lines.emplace_back(rest.substr(0, paren), rest.substr(paren + 2));
        } else if (kind == "append") {
            const auto s2 = rest.find(' ');
            appends.emplace_back(rest.substr(0, s2), rest.substr(s2 + 1));
        } else if (kind == "replace") {
            const auto arrow = rest.find(" => ");
            if (arrow == std::string::npos)
                errors.push_back(b.where() + ": not `test: replace FROM => TO`: " + m);
            else
                replaces.emplace_back(
                    rest.substr(0, arrow),
                    replace_all(rest.substr(arrow + 4), "{port}", std::to_string(port)));
        } else if (kind == "file") {
            const auto s2 = rest.find(' ');
            files += "printf '%s\\n' " +
                     shell_quoted(replace_all(rest.substr(s2 + 1), "\\n", "\n")) + " > " +
                     shell_quoted(rest.substr(0, s2)) + "\n";
        } else if (kind == "background") {
            backgrounds.push_back(rest);
        } else {
            errors.push_back(b.where() + ": unknown marker `test: " + m + "`");
        }
    }
    // Servers started in the background end with the block (SIGTERM: they drain and exit). Idle
    // OpenMP threads sleep instead of spinning, as scripts/test.sh has them, since ctest may run
    // other tests beside this one.
    std::string script =
        "set -eo pipefail\nexport OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}\ncd " +
        shell_quoted(dir) + "\ntrap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT\n" + files;
    bool any = false, wait_port = false;
    const std::regex assignment("^[A-Za-z_][A-Za-z0-9_]*=");
    for (std::string line : b.lines) {
        line = strip_comment(line);
        if (line.empty()) continue;
        bool skipped = false;
        for (const auto& [prefix, why] : skip_lines) skipped = skipped || line.starts_with(prefix);
        if (skipped) continue;
        for (const auto& [from, to] : replaces) line = replace_all(line, from, to);
        const auto w = words(line);
        if (w.empty() || !(w[0] == "build/meshlm" || w[0] == "echo" || w[0] == "curl" ||
                           std::regex_search(line, assignment))) {
            errors.push_back(b.where() + ": `" + line +
                             "` is neither run (build/meshlm, echo, curl) nor marked "
                             "<!-- test: skip-line PREFIX (REASON) --> or "
                             "<!-- test: skip REASON -->");
            continue;
        }
        bool background = false;
        for (const auto& prefix : backgrounds) background = background || line.starts_with(prefix);
        if (line.ends_with("&") && !line.ends_with("&&")) {
            if (!background)
                errors.push_back(
                    b.where() + ": `" + line +
                    "` runs in the background: mark it <!-- test: background PREFIX -->");
            line = trim(line.substr(0, line.size() - 1));
        }
        for (const auto& [sub, args] : appends)
            if (line.find("build/meshlm " + sub + " ") != std::string::npos ||
                line.ends_with("build/meshlm " + sub))
                line += " " + args;
        line = replace_all(line, "build/meshlm", test::meshlm_binary());
        if (wait_port) {
            script += "for i in $(seq 300); do curl -sf http://127.0.0.1:" + std::to_string(port) +
                      "/health >/dev/null && break; sleep 0.1; done\n";
            wait_port = false;
        }
        script += "echo + " + shell_quoted(line) + "\n";
        if (background) {
            script += line + " > background.log 2>&1 &\n";
            wait_port = true;
        } else {
            script += line + "\n";
        }
        any = true;
    }
    return any ? script : "";
}

// Every `meshlm SUBCOMMAND ...` of the block (`build/meshlm` anywhere, as after mpirun; `meshlm`
// starting a command): the words after it up to the end of that command.
std::vector<std::vector<std::string>> meshlm_commands(const Block& b) {
    std::vector<std::vector<std::string>> out;
    for (const std::string& raw : b.lines) {
        const auto w = words(strip_comment(raw));
        for (std::size_t i = 0; i + 1 < w.size(); ++i) {
            const bool starts = i == 0 || w[i - 1] == "|" || w[i - 1] == "&&" || w[i - 1] == ";";
            if (w[i] != "build/meshlm" && !(w[i] == "meshlm" && starts)) continue;
            std::vector<std::string> cmd;
            for (std::size_t j = i + 1; j < w.size(); ++j) {
                if (w[j] == "|" || w[j] == "&&" || w[j] == ";" || w[j] == "&") break;
                cmd.push_back(w[j]);
            }
            out.push_back(cmd);
        }
    }
    return out;
}

// The subcommands `meshlm --help` lists.
std::vector<std::string> subcommands() {
    const auto r = test::run_command(test::meshlm_binary() + " --help");
    const auto at = r.output.find("Subcommands:");
    std::istringstream in(at == std::string::npos ? "" : r.output.substr(at));
    std::vector<std::string> out;
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
        const auto w = words(line);
        if (line.starts_with("  ") && !w.empty()) out.push_back(w[0]);
    }
    return out;
}

TEST(ReadmeFlow, TheTourShowsEverySubcommand) {
    const auto subs = subcommands();
    ASSERT_GE(subs.size(), 10u) << "meshlm --help lists its subcommands";
    std::set<std::string> shown;
    for (const Block& b : doc_blocks("README.md"))
        if (b.shell())
            for (const auto& cmd : meshlm_commands(b))
                if (!cmd.empty()) shown.insert(cmd[0]);
    for (const auto& s : subs)
        EXPECT_TRUE(shown.count(s))
            << "README.md has no `build/meshlm " << s << " ...` example in a command block";
}

TEST(ReadmeFlow, EveryDocumentedFlagAndKeyExists) {
    const auto subs = subcommands();
    const std::set<std::string> known(subs.begin(), subs.end());
    std::set<std::string> keys;
    std::istringstream list(test::run_command(test::meshlm_binary() + " config --list").output);
    for (std::string line; std::getline(list, line);) {
        const auto w = words(line);
        if (line.starts_with("  ") && !w.empty() && w[0].find('.') != std::string::npos)
            keys.insert(w[0]);
    }
    ASSERT_GT(keys.size(), 50u) << "meshlm config --list lists the keys";
    std::map<std::string, std::string> help;
    int checked = 0;
    for (const auto& file : doc_files())
        for (const Block& b : doc_blocks(file)) {
            if (!b.shell()) continue;
            for (const auto& cmd : meshlm_commands(b)) {
                if (cmd.empty() || !known.count(cmd[0])) {
                    ADD_FAILURE() << b.where() << ": `meshlm " << (cmd.empty() ? "" : cmd[0])
                                  << "` is not a subcommand";
                    continue;
                }
                auto& text = help[cmd[0]];
                if (text.empty())
                    text =
                        test::run_command(test::meshlm_binary() + " " + cmd[0] + " --help").output;
                for (std::size_t i = 1; i < cmd.size(); ++i) {
                    if (!cmd[i].starts_with("--") || cmd[i] == "--") continue;
                    const std::string flag = cmd[i].substr(0, cmd[i].find('='));
                    ++checked;
                    if (flag.starts_with("--config.")) {
                        EXPECT_TRUE(keys.count(flag.substr(9)))
                            << b.where() << ": there is no config key " << flag.substr(9);
                    } else {
                        EXPECT_TRUE(std::regex_search(
                            text,
                            std::regex("(^|[ ,])" + flag + "([ =:]|$)", std::regex::multiline)))
                            << b.where() << ": `meshlm " << cmd[0] << "` has no flag " << flag;
                    }
                }
            }
        }
    EXPECT_GT(checked, 100) << "flags checked";
}

// GitHub's anchor of a heading: lower case, spaces to hyphens, other punctuation dropped.
std::string heading_anchor(const std::string& heading) {
    std::string out;
    for (const unsigned char c : heading) {
        if (std::isalnum(c) || c == '_' || c == '-' || c >= 0x80)
            out += static_cast<char>(std::tolower(c));
        else if (c == ' ')
            out += '-';
    }
    return out;
}

TEST(ReadmeFlow, EveryLinkBetweenTheDocsResolves) {
    const std::regex link(R"(\]\(([^)\s]+)\))");
    int checked = 0;
    for (const auto& file : doc_files()) {
        const std::string text = test::read_file(test::source_dir() + "/" + file);
        const fs::path base = fs::path(file).parent_path();
        for (auto it = std::sregex_iterator(text.begin(), text.end(), link);
             it != std::sregex_iterator(); ++it) {
            const std::string target = (*it)[1];
            if (target.starts_with("http")) continue;
            const auto hash = target.find('#');
            const std::string path = target.substr(0, hash);
            const std::string rel = path.empty() ? file : (base / path).lexically_normal().string();
            ++checked;
            EXPECT_TRUE(fs::exists(test::source_dir() + "/" + rel))
                << file << ": the link " << target << " names no file";
            if (hash == std::string::npos || !rel.ends_with(".md") ||
                !fs::exists(test::source_dir() + "/" + rel))
                continue;
            std::set<std::string> anchors;
            std::istringstream in(test::read_file(test::source_dir() + "/" + rel));
            for (std::string line; std::getline(in, line);)
                if (line.starts_with("#"))
                    anchors.insert(heading_anchor(trim(line.substr(line.find(' ') + 1))));
            EXPECT_TRUE(anchors.count(target.substr(hash + 1)))
                << file << ": the link " << target << " names no heading of " << rel;
        }
    }
    EXPECT_GT(checked, 20) << "links checked";
}

TEST(ReadmeFlow, EveryCommandBlockRuns) {
    const std::string root = test::temp_dir("docs");
    std::vector<std::string> errors;
    int ran = 0, skipped = 0;
    std::string readme_dir;
    for (const auto& file : doc_files()) {
        const std::string dir = root + "/" + replace_all(file, "/", "_");
        fs::create_directories(dir + "/runs");
        fs::create_directory_symlink(test::source_dir() + "/configs", dir + "/configs");
        fs::create_directory_symlink(test::source_dir() + "/tests", dir + "/tests");
        if (readme_dir.empty())
            readme_dir = dir;
        else if (fs::exists(readme_dir + "/runs/default"))
            fs::copy(readme_dir + "/runs/default", dir + "/runs/default",
                     fs::copy_options::recursive);
        for (const Block& b : doc_blocks(file)) {
            if (!b.shell()) continue;
            const std::string script = block_script(b, dir, errors);
            if (script.empty()) {
                ++skipped;
                continue;
            }
            test::write_file(dir + "/block.sh", script);
            const auto start = std::chrono::steady_clock::now();
            const auto r =
                test::run_command("cd " + shell_quoted(dir) + " && HOME=" + shell_quoted(dir) +
                                  " timeout 600 bash block.sh < /dev/null");
            ++ran;
            std::printf(
                "%s: %.1f s\n", b.where().c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            const std::string log = test::read_file(dir + "/background.log");
            EXPECT_EQ(r.exit_code, 0) << b.where() << ": the block failed\n--- script\n"
                                      << script << "--- output\n"
                                      << r.output << (log.empty() ? "" : "--- background\n" + log);
            fs::remove(dir + "/background.log");
        }
    }
    for (const auto& e : errors) ADD_FAILURE() << e;
    EXPECT_GT(ran, 15) << "command blocks run";
    std::printf("ran %d command blocks; %d skipped by their markers\n", ran, skipped);
}

std::string zstd_bytes(const std::string& data) {
    std::string out(ZSTD_compressBound(data.size()), '\0');
    const std::size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
    out.resize(ZSTD_isError(n) ? 0 : n);
    return out;
}

TEST(ReadmeFlow, PrepareWithATokenizerJsonThenTrainThenEvalTest) {
    const auto commands = doc_block("prepare --input 'data/*.jsonl.zst'");
    ASSERT_EQ(commands.size(), 3u) << "the documented prepare -> train -> eval block changed";
    const std::string dir = test::temp_dir("readme");
    // What the commands expect to find: data/*.jsonl.zst, tokenizer.json and my.yaml.
    std::string jsonl;
    for (int i = 0; i < 2000; ++i)
        jsonl += "{\"text\": \"document " + std::to_string(i) +
                 ": the quick brown fox jumps over the lazy dog " + std::to_string(i % 7) +
                 " times.\"}\n";
    test::write_file(dir + "/data/a.jsonl.zst", zstd_bytes(jsonl));
    fs::copy_file(test::fixture("tokenizers/bpe_trained.json"), dir + "/tokenizer.json");
    test::write_file(dir + "/my.yaml",
                     "model: {n_layer: 1, d_model: 32, n_head: 2, vocab_size: 512, "
                     "max_seq_len: 32}\n"
                     "train: {steps: 4, batch_size: 4, seq_len: 32, threads: 2, "
                     "peak_gflops: 100}\n"
                     "data: {tokenizer: tokenizer.json}\n"
                     "log: {interval: 2, eval_interval: 0, sample_tokens: 0}\n");
    for (std::string cmd : commands) {
        ASSERT_TRUE(cmd.starts_with("build/meshlm ")) << cmd;
        cmd = "cd " + dir + " && " + test::meshlm_binary() + cmd.substr(12);
        const auto r = test::run_command(cmd);
        ASSERT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
        if (cmd.find(" eval ") != std::string::npos) {
            EXPECT_NE(r.output.find("nats/token"), std::string::npos) << r.output;
        }
    }
}

}  // namespace
}  // namespace meshlm
