// Chat templates rendered byte for byte as transformers' apply_chat_template renders them
// (tests/fixtures/chat_templates/<family>/, written by tools/reference/chat_template_reference.py:
// Llama-3, Llama-3.2 with tools, Qwen2, Qwen2.5 with tool calls, Mistral v0.1 and v0.3, SmolLM2),
// including the errors the templates raise; the Jinja details they rely on; and refusals of
// what the subset does not have, by name and position.
#include "meshlm/data/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "meshlm/core/error.h"
#include "test_util.h"

namespace meshlm {
namespace {

using jinja::Json;

std::string fixture_dir(const std::string& family) {
    return test::source_dir() + "/tests/fixtures/chat_templates/" + family;
}

class ChatTemplateFamily : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateFamily, RendersAsTransformersDoes) {
    const std::string dir = fixture_dir(GetParam());
    const ChatTemplate tmpl = ChatTemplate::from_tokenizer_config(dir + "/tokenizer_config.json");
    std::ifstream in(dir + "/expected.json");
    ASSERT_TRUE(in) << dir;
    std::stringstream ss;
    ss << in.rdbuf();
    const Json cases = Json::parse(ss.str());
    ASSERT_GE(cases.size(), 8u);
    int i = 0;
    for (const Json& c : cases) {
        SCOPED_TRACE("case " + std::to_string(i++) + ": " + c["messages"].dump());
        if (c.contains("error")) {
            try {
                tmpl.apply(c["messages"], c["add_generation_prompt"], c["kwargs"]);
                ADD_FAILURE() << "expected the template to raise: " << c["error"];
            } catch (const ChatTemplateError& e) {
                EXPECT_EQ(std::string(e.what()), c["error"].get<std::string>());
            }
            continue;
        }
        EXPECT_EQ(tmpl.apply(c["messages"], c["add_generation_prompt"], c["kwargs"]),
                  c["output"].get<std::string>());
    }
}

INSTANTIATE_TEST_SUITE_P(Families, ChatTemplateFamily,
                         ::testing::Values("llama3", "llama3.2", "qwen2", "qwen2.5", "mistral",
                                           "mistral-v0.3", "smollm2"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& ch : n)
                                 if (ch == '.' || ch == '-') ch = '_';
                             return n;
                         });

TEST(ChatTemplate, EndOfTurnIsWhatFollowsAnAssistantMessage) {
    auto eot = [](const std::string& family) {
        return ChatTemplate::from_tokenizer_config(fixture_dir(family) + "/tokenizer_config.json")
            .end_of_turn();
    };
    EXPECT_EQ(eot("qwen2"), std::vector<std::string>{"<|im_end|>"});
    EXPECT_EQ(eot("llama3"), std::vector<std::string>{"<|eot_id|>"});
    EXPECT_EQ(eot("mistral"), std::vector<std::string>{"</s>"});
    EXPECT_EQ(ChatTemplate::fallback().end_of_turn(), std::vector<std::string>{"<|im_end|>"});
}

std::string render(const std::string& src, const Json& vars = Json::object()) {
    return ChatTemplate(src).apply(Json::array(), false, vars);
}

TEST(ChatTemplate, WhitespaceControlAsTransformersConfiguresJinja) {
    // trim_blocks drops the newline after a block tag, lstrip_blocks the indent before it;
    // neither touches {{ }}; '-' strips all whitespace on its side, '+' keeps it.
    EXPECT_EQ(render("  {% if true %}\n  a\n  {% endif %}\n  b {{ 1 }}\n"), "  a\n  b 1");
    EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif %}"), "ab");
    EXPECT_EQ(render("a\n  {%+ if true %}b{% endif %}"), "a\n  b");
    EXPECT_EQ(render("{# note #}\n  {#- x #} y"), " y");
    EXPECT_EQ(render("{{ 'x' }}\n{{- 'y' }}"), "xy");
}

TEST(ChatTemplate, PythonSemantics) {
    EXPECT_EQ(render("{% set x = 0 %}{% for i in range(3) %}{% set x = x + 1 %}{{ x }}"
                     "{% endfor %}{{ x }}"),
              "1110");  // a loop's `set` does not leak (namespace() does)
    EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}"
                     "{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
              "6");
    EXPECT_EQ(render("{{ [1, 'a', none, true, 1.5, {'k': 'v'}] }} {{ none }} {{ 1e20 }} "
                     "{{ 0.00001 }} {{ 1/2 }} {{ 7//2 }} {{ -7 % 3 }}"),
              "[1, 'a', None, True, 1.5, {'k': 'v'}] None 1e+20 1e-05 0.5 3 2");
    EXPECT_EQ(render("{{ 'a' ~ 1 ~ none }}{{ 3 * 'ab' }}{{ x | length }}{{ x }}|"),
              "a1Noneababab0|");
    EXPECT_EQ(render("{% for a in [1, 2, 3] if a > 1 %}{{ loop.index }}{{ loop.last }}"
                     "{% else %}E{% endfor %}"),
              "1False2True");
    EXPECT_EQ(render("{{ 'héllo wörld'[1:4] }}|{{ [1, 2, 3][::-1] }}|{{ 'a,b'.split(',')[-1] }}"),
              "éll|[3, 2, 1]|b");
    EXPECT_EQ(render("{{ '  x  '.strip() }}|{{ 'abc'.startswith('ab') }}|{{ 'Ab'.upper() }}|"
                     "{{ ' y ' | trim }}|{{ {'b': 1, 'a': 'é'} | tojson }}"),
              "x|True|AB|y|{\"b\": 1, \"a\": \"é\"}");
    EXPECT_EQ(render("{{ x or 'd' }}{{ 1 if false }}{{ 'in' in 'string' }}{{ 'k' in {'k': 1} }}"),
              "dTrueTrue");
    EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"),
              "a=1;b=2;");
    EXPECT_EQ(render("{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute="
                     "'content') | join(', ') }}",
                     {{"msgs", Json::array({{{"role", "user"}, {"content", "a"}},
                                            {{"role", "bot"}, {"content", "b"}},
                                            {{"role", "user"}, {"content", "c"}}})}}),
              "a, c");
}

void expect_refused(const std::string& src, const std::string& what) {
    try {
        ChatTemplate t(src);
        t.apply(Json::array(), true);
        ADD_FAILURE() << "accepted: " << src;
    } catch (const ChatTemplateError& e) {
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
}

TEST(ChatTemplate, RefusesWhatItDoesNotSupportByNameAndPosition) {
    expect_refused("ab\n{% macro f() %}x{% endmacro %}",
                   "unsupported statement 'macro' at line 2, column 1");
    expect_refused("{% include 'x' %}", "unsupported statement 'include' at line 1, column 1");
    expect_refused("{{ x | wordwrap }}", "unsupported filter 'wordwrap' at line 1, column 8");
    expect_refused("{{ x is sameas y }}", "unsupported test 'sameas'");
    expect_refused("{{ lipsum() }}", "unsupported function 'lipsum'");
    expect_refused("{{ 'a'.zfill(3) }}", "unsupported method 'zfill'");
    expect_refused("{% if x %}", "missing '{% endif %}'");
    expect_refused("{{ 'a' + 1 }}", "unsupported operand type(s) for +: 'str' and 'int' at line 1");
    expect_refused("{{ x.y }}", "'x' is undefined at line 1");
    expect_refused("{{ raise_exception('no system role') }}", "no system role");
    EXPECT_THROW(
        ChatTemplate::from_tokenizer_config(test::source_dir() + "/tests/fixtures/none.json"),
        InvalidInput);
}

}  // namespace
}  // namespace meshlm
