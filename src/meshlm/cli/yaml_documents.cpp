// yaml_documents.h: one YAML document, counted with a parser that cannot loop forever.
#include "meshlm/cli/yaml_documents.h"

#include <yaml-cpp/eventhandler.h>

#include <sstream>

#include "meshlm/core/error.h"

namespace meshlm {
namespace {

// Counts documents and notices one that starts where the previous one did (no progress).
class DocumentCounter : public YAML::EventHandler {
  public:
    int documents = 0;
    YAML::Mark last = YAML::Mark::null_mark();  // where the last document started
    void OnDocumentStart(const YAML::Mark& mark) override {
        if (documents > 0 && mark.pos == last.pos)
            throw YAML::ParserException(mark, "unexpected token here (a ',' outside brackets?)");
        last = mark;
        ++documents;
    }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
};

}  // namespace

YAML::Node load_single_yaml_document(const std::string& text, const std::string& name) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentCounter counter;
    while (counter.documents < 2 && parser.HandleNextDocument(counter)) {
    }
    if (counter.documents > 1)
        MESHLM_INVALID(name, ": holds 2 YAML documents (the second from line ",
                       counter.last.line + 1, "); expected one");
    return YAML::Load(text);
}

}  // namespace meshlm
