// TensorBoard event files, byte level: CRC32C against published vectors, TFRecord framing
// against the bytes tensorboard's own RecordWriter writes, and the step an encoded Event
// carries. The files a run writes are read by tensorboard's reader in tensorboard_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "meshlm/core/error.h"
#include "meshlm/io/tensorboard_event.h"
#include "meshlm/io/tfrecord.h"

namespace meshlm {
namespace {

std::string hex(const std::string& s) {
    static const char* d = "0123456789abcdef";
    std::string h;
    for (const unsigned char c : s) h += std::string{d[c >> 4], d[c & 15]};
    return h;
}

// RFC 3720 (iSCSI) B.4 and the usual check value.
TEST(TensorBoardEvents, Crc32cKnownVectors) {
    EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
    EXPECT_EQ(crc32c(""), 0u);
    EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
    EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
    std::string ascending;
    for (int i = 0; i < 32; ++i) ascending += static_cast<char>(i);
    EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
}

// The bytes of tensorboard.summary.writer.record_writer.RecordWriter (tensorboard 2.21) for
// b"hello" and b"".
TEST(TensorBoardEvents, RecordFramingIsTensorFlows) {
    EXPECT_EQ(hex(tfrecord_frame("hello")), "0500000000000000eab2043e68656c6c6fbb1f1c19");
    EXPECT_EQ(hex(tfrecord_frame("")), "000000000000000029039807d8ea82a2");
}

TEST(TensorBoardEvents, RecordsReadBackAndDamageIsNamed) {
    const std::string file = tfrecord_frame("first") + tfrecord_frame("") + tfrecord_frame("third");
    const auto records = tfrecord_records(file, "f");
    ASSERT_EQ(records.size(), 3u);
    EXPECT_EQ(records[0], "first");
    EXPECT_EQ(records[1], "");
    EXPECT_EQ(records[2], "third");
    // A torn last record (killed mid-write) ends the list.
    EXPECT_EQ(tfrecord_records(file.substr(0, file.size() - 2), "f").size(), 2u);
    // A flipped data byte or length byte is a named error.
    std::string bad = file;
    bad[12] ^= 1;
    EXPECT_THROW(tfrecord_records(bad, "f"), InvalidInput);
    bad = file;
    bad[0] ^= 1;
    try {
        tfrecord_records(bad, "events.out.tfevents.1");
        ADD_FAILURE() << "no error";
    } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find("events.out.tfevents.1: record at byte 0"),
                  std::string::npos)
            << e.what();
    }
}

TEST(TensorBoardEvents, EventsCarryTheirStep) {
    EXPECT_EQ(tb_event_step(tb_file_version_event(1.7e9)), 0);
    EXPECT_EQ(tb_event_step(tb_scalars_event(1.7e9, 300, {{"loss", 2.5f}, {"lr", 1e-3f}})), 300);
    EXPECT_EQ(tb_event_step(tb_text_event(1.7e9, 1LL << 40, "sample", "text")), 1LL << 40);
    // The file version is the string TensorBoard looks for.
    EXPECT_NE(tb_file_version_event(0).find("brain.Event:2"), std::string::npos);
    EXPECT_THROW(tb_event_step(std::string("\x12\x05", 2)), InvalidInput);  // field past the end
}

}  // namespace
}  // namespace meshlm
