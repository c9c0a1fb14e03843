// A safetensors file written in parts (io/safetensors_parts.h), as the ranks of a run write the
// final weights: two writers filling interleaved pieces give the same bytes as
// write_safetensors of the whole tensors, nothing appears under the final name before
// publishing, and a discarded file leaves nothing behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/io/safetensors_parts.h"
#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

TEST(SafetensorsParts, TwoWritersGiveTheWholeFilesBytes) {
    const std::string dir = test::temp_dir("safetensors_parts");
    std::vector<float> a(60), b(7);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.25f * static_cast<float>(i) - 3.f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = 1.f / static_cast<float>(i + 1);
    const std::vector<SafetensorsTensor> whole = {{"a", DType::f32, {6, 10}, a.data()},
                                                  {"b", DType::f32, {7}, b.data()}};
    const std::map<std::string, std::string> meta = {{"format", "pt"}};
    write_safetensors(dir + "/whole.safetensors", whole, meta);

    const std::string path = dir + "/parts.safetensors";
    const SafetensorsPlan plan = plan_safetensors(
        {{"a", DType::f32, {6, 10}, nullptr}, {"b", DType::f32, {7}, nullptr}}, meta);
    create_safetensors_parts(path, plan);
    {
        // Writer 1: a's even rows and b's head; writer 2 the rest, in reverse order.
        SafetensorsPartWriter w1(path, plan), w2(path, plan);
        for (std::size_t row = 0; row < 6; row += 2) w1.write_f32(0, row * 10, &a[row * 10], 10);
        w1.write_f32(1, 0, b.data(), 3);
        w2.write_f32(1, 3, &b[3], 4);
        for (std::size_t row : {5, 3, 1}) w2.write_f32(0, row * 10, &a[row * 10], 10);
        w1.sync(), w2.sync();
    }
    EXPECT_FALSE(fs::exists(path));  // only under its temporary name until published
    publish_safetensors_parts(path);
    EXPECT_FALSE(fs::exists(safetensors_parts_path(path)));
    EXPECT_EQ(test::read_file(path), test::read_file(dir + "/whole.safetensors"));
    SafetensorsFile f(path);
    EXPECT_EQ(f.f32("a"), a);
    EXPECT_EQ(f.f32("b"), b);
}

TEST(SafetensorsParts, DiscardRemovesTheTemporaryFile) {
    const std::string dir = test::temp_dir("safetensors_parts_discard");
    const std::string path = dir + "/w.safetensors";
    const SafetensorsPlan plan = plan_safetensors({{"x", DType::f32, {4}, nullptr}});
    create_safetensors_parts(path, plan);
    EXPECT_EQ(fs::file_size(safetensors_parts_path(path)), plan.size);
    discard_safetensors_parts(path);
    EXPECT_FALSE(fs::exists(safetensors_parts_path(path)));
    EXPECT_FALSE(fs::exists(path));
    // A writer on a file never created is an error naming it, not a silent no-op.
    EXPECT_THROW(SafetensorsPartWriter(path, plan), Error);
}

}  // namespace
}  // namespace meshlm
