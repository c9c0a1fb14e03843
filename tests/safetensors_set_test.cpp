// Sharded safetensors: single-file and HF-sharded round trips, the index's contents, BF16 reads
// and rounding, and refusal of broken sets (missing shard, bad index, duplicated tensor).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "meshlm/core/error.h"
#include "meshlm/io/safetensors_set.h"
#include "test_util.h"

namespace meshlm {
namespace {

namespace fs = std::filesystem;

// Four tensors of 400, 400, 200 and 40 bytes with distinct contents.
struct Tensors {
    std::vector<float> a, b, c, d;
    std::vector<SafetensorsTensor> list;
    Tensors() : a(100), b(100), c(50), d(10) {
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.5f * i;
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = -1.25f * i;
        for (std::size_t i = 0; i < c.size(); ++i) c[i] = 1.f / (i + 1);
        for (std::size_t i = 0; i < d.size(); ++i) d[i] = 3.f + i;
        list = {{"a", DType::f32, {10, 10}, a.data()},
                {"b", DType::f32, {100}, b.data()},
                {"c", DType::f32, {5, 10}, c.data()},
                {"d", DType::f32, {10}, d.data()}};
    }
};

void expect_holds(const SafetensorsSet& set, const Tensors& t) {
    ASSERT_EQ(set.names(), (std::vector<std::string>{"a", "b", "c", "d"}));
    const Shape sa{10, 10};
    EXPECT_EQ(set.f32("a", &sa), t.a);
    EXPECT_EQ(set.f32("b"), t.b);
    EXPECT_EQ(set.f32("c"), t.c);
    EXPECT_EQ(set.f32("d"), t.d);
    EXPECT_EQ(set.metadata().at("format"), "pt");
}

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const InvalidInput& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(SafetensorsSet, SingleFileWhenItFits) {
    Tensors t;
    const std::string dir = test::temp_dir("st_single");
    auto files = write_safetensors_sharded(dir, "model", t.list, {{"format", "pt"}}, 1040);
    EXPECT_EQ(files, (std::vector<std::string>{"model.safetensors"}));
    EXPECT_FALSE(fs::exists(dir + "/model.safetensors.index.json"));
    SafetensorsSet set(dir);
    expect_holds(set, t);
    EXPECT_EQ(set.files(), files);
    // 0 means never shard.
    EXPECT_EQ(write_safetensors_sharded(dir, "model", t.list, {}, 0).size(), 1u);
}

TEST(SafetensorsSet, ShardsGreedilyWithAnHfIndex) {
    Tensors t;
    const std::string dir = test::temp_dir("st_sharded");
    // 500-byte shards: a (400) | b (400) | c + d (240), filled in the given order.
    auto files = write_safetensors_sharded(dir, "model", t.list, {{"format", "pt"}}, 500);
    ASSERT_EQ(files, (std::vector<std::string>{
                         "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                         "model-00003-of-00003.safetensors", "model.safetensors.index.json"}));
    auto index = nlohmann::json::parse(test::read_file(dir + "/model.safetensors.index.json"));
    EXPECT_EQ(index["metadata"]["total_size"], 1040);
    EXPECT_EQ(index["metadata"]["total_parameters"], 260);
    EXPECT_EQ(index["weight_map"]["a"], "model-00001-of-00003.safetensors");
    EXPECT_EQ(index["weight_map"]["b"], "model-00002-of-00003.safetensors");
    EXPECT_EQ(index["weight_map"]["c"], "model-00003-of-00003.safetensors");
    EXPECT_EQ(index["weight_map"]["d"], "model-00003-of-00003.safetensors");
    EXPECT_EQ(index["weight_map"].size(), 4u);
    SafetensorsSet set(dir);
    expect_holds(set, t);
    EXPECT_EQ(set.file_of("d"), "model-00003-of-00003.safetensors");
    EXPECT_EQ(set.files().size(), 3u);
    // A tensor larger than the limit gets a shard of its own.
    const std::string dir2 = test::temp_dir("st_big");
    auto files2 = write_safetensors_sharded(dir2, "model", t.list, {{"format", "pt"}}, 100);
    EXPECT_EQ(files2.size(), 5u);
    expect_holds(SafetensorsSet(dir2), t);
}

TEST(SafetensorsSet, RewritingSwitchesLayoutCleanly) {
    Tensors t;
    const std::string dir = test::temp_dir("st_switch");
    write_safetensors_sharded(dir, "model", t.list, {{"format", "pt"}}, 500);
    write_safetensors_sharded(dir, "model", t.list, {{"format", "pt"}}, 0);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
    expect_holds(SafetensorsSet(dir), t);
    write_safetensors_sharded(dir, "model", t.list, {{"format", "pt"}}, 900);
    EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 3);
    expect_holds(SafetensorsSet(dir), t);
}

TEST(SafetensorsSet, ReadsBf16AsFloat) {
    std::vector<float> x = {1.f, -2.5f, 3.140625f, 1e-3f, 65504.f, 0.f};
    std::vector<std::uint16_t> bits;
    for (float v : x) bits.push_back(bf16_from_f32(v));
    const std::string dir = test::temp_dir("st_bf16");
    write_safetensors(dir + "/model.safetensors",
                      {{"x", DType::bf16, {static_cast<std::int64_t>(x.size())}, bits.data()}});
    SafetensorsSet set(dir);
    EXPECT_EQ(set.entry("x").dtype, DType::bf16);
    auto y = set.f32("x");
    ASSERT_EQ(y.size(), x.size());
    // Exactly representable values come back unchanged; others to within half a bf16 ulp.
    EXPECT_EQ(y[0], 1.f);
    EXPECT_EQ(y[1], -2.5f);
    EXPECT_EQ(y[2], 3.140625f);
    EXPECT_NEAR(y[3], 1e-3f, 1e-3f * std::ldexp(1.f, -8));
    EXPECT_EQ(y[4], 65536.f);  // 65504 rounds up to 2^16 in bf16
    EXPECT_EQ(y[5], 0.f);
}

TEST(SafetensorsSet, Bf16RoundsToNearestEven) {
    auto from_bits = [](std::uint32_t u) {
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    };
    EXPECT_EQ(bf16_from_f32(from_bits(0x3f808000u)), 0x3f80);  // tie, even below: down
    EXPECT_EQ(bf16_from_f32(from_bits(0x3f818000u)), 0x3f82);  // tie, odd below: up
    EXPECT_EQ(bf16_from_f32(from_bits(0x3f808001u)), 0x3f81);  // above the tie: up
    EXPECT_EQ(bf16_from_f32(from_bits(0x3f807fffu)), 0x3f80);  // below the tie: down
    EXPECT_EQ(bf16_from_f32(from_bits(0xbf818000u)), 0xbf82);  // sign does not matter
    EXPECT_EQ(bf16_from_f32(from_bits(0x7f7fffffu)), 0x7f80);  // max float rounds to +inf
    EXPECT_TRUE(std::isnan(f32_from_bf16(bf16_from_f32(std::numeric_limits<float>::quiet_NaN()))));
    EXPECT_TRUE(std::isnan(f32_from_bf16(bf16_from_f32(from_bits(0x7f800001u)))));  // sNaN
}

TEST(SafetensorsSet, RefusesBrokenSets) {
    Tensors t;
    auto sharded = [&](const std::string& tag) {
        const std::string dir = test::temp_dir(tag);
        write_safetensors_sharded(dir, "model", t.list, {{"format", "pt"}}, 500);
        return dir;
    };
    {  // missing shard
        const std::string dir = sharded("st_missing");
        fs::remove(dir + "/model-00002-of-00003.safetensors");
        std::string msg = message_of([&] { SafetensorsSet s(dir); });
        EXPECT_NE(msg.find("model-00002-of-00003.safetensors"), std::string::npos) << msg;
        EXPECT_NE(msg.find("missing shard"), std::string::npos) << msg;
    }
    {  // index that is not JSON / has no weight_map
        const std::string dir = sharded("st_badindex");
        test::write_file(dir + "/model.safetensors.index.json", "{\"weight_map\": [1,");
        std::string msg = message_of([&] { SafetensorsSet s(dir); });
        EXPECT_NE(msg.find("model.safetensors.index.json: not valid JSON"), std::string::npos)
            << msg;
        test::write_file(dir + "/model.safetensors.index.json", "{\"metadata\": {}}");
        msg = message_of([&] { SafetensorsSet s(dir); });
        EXPECT_NE(msg.find("no \"weight_map\""), std::string::npos) << msg;
        test::write_file(dir + "/model.safetensors.index.json",
                         R"({"weight_map": {"a": "../elsewhere.safetensors"}})");
        msg = message_of([&] { SafetensorsSet s(dir); });
        EXPECT_NE(msg.find("not a file name inside the directory"), std::string::npos) << msg;
    }
    {  // index claims a tensor its file does not hold
        const std::string dir = sharded("st_claim");
        auto index = nlohmann::json::parse(test::read_file(dir + "/model.safetensors.index.json"));
        index["weight_map"]["e"] = "model-00001-of-00003.safetensors";
        test::write_file(dir + "/model.safetensors.index.json", index.dump());
        std::string msg = message_of([&] { SafetensorsSet s(dir); });
        EXPECT_NE(msg.find("tensor 'e' is in model-00001-of-00003.safetensors"), std::string::npos)
            << msg;
    }
    {  // the same tensor in two shards
        const std::string dir = sharded("st_dup");
        write_safetensors(dir + "/model-00003-of-00003.safetensors",
                          {t.list[0], t.list[2], t.list[3]}, {{"format", "pt"}});
        std::string msg = message_of([&] { SafetensorsSet s(dir); });
        EXPECT_NE(msg.find("tensor 'a' appears in both model-00001-of-00003.safetensors and "
                           "model-00003-of-00003.safetensors"),
                  std::string::npos)
            << msg;
    }
    {  // truncated shard
        const std::string dir = sharded("st_trunc");
        const std::string path = dir + "/model-00002-of-00003.safetensors";
        fs::resize_file(path, fs::file_size(path) - 10);
        std::string msg = message_of([&] { SafetensorsSet s(dir); });
        EXPECT_NE(msg.find("model-00002-of-00003.safetensors"), std::string::npos) << msg;
        EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
    }
    {  // nothing there
        const std::string dir = test::temp_dir("st_empty");
        std::string msg = message_of([&] { SafetensorsSet s(dir); });
        EXPECT_NE(msg.find("neither model.safetensors nor model.safetensors.index.json"),
                  std::string::npos)
            << msg;
    }
}

}  // namespace
}  // namespace meshlm
