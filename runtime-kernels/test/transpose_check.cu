//===- transpose_check.cu - The FP8 tiles' transposed stores, on the CPU
//---===//
//
// te-transpose-check: runs tile.cuh's host twins (the code the casts and
// the byte transpose run on the GPU) on this machine and checks
//   - bytePerm against PTX prmt's definition, byte by byte;
//   - transpose4x4, plain and with its rows pairwise swapped;
//   - storeQuad over every quad of the 128x64 and 64x64 tiles against a
//     plain transpose into a destination with padded rows, every
//     destination byte outside the transposed rows left alone;
//   - the shared-memory banks: at each of a quad's 8 loads, the 32 quads of
//     a warp read distinct banks for 128x64 tiles, at most two words per
//     bank for 64x64;
//   - storePiece (the stores of ragged or misaligned tiles) over every
//     piece of 128x64, 64x64 and 128x128 tiles cut to fewer rows and
//     columns, with 16-byte and byte stores: exactly the tensor's bytes
//     written.
// Exit 0 when all hold, 1 with the first failure named.
//
//===----------------------------------------------------------------------===//

#include "../src/tile.cuh"

#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <vector>

using namespace te::kernels;

namespace {

int failures = 0;

void fail(const char *what) {
  std::printf("te-transpose-check: FAIL: %s\n", what);
  ++failures;
}

uint8_t byteOf(uint32_t w, int i) { return static_cast<uint8_t>(w >> (8 * i)); }

void checkBytePerm(std::mt19937 &rng) {
  // prmt, default mode: result byte n = byte sel[4n+2:4n] of {b, a}.
  for (int trial = 0; trial < 1000; ++trial) {
    const uint32_t a = rng(), b = rng(), sel = rng() & 0x7777u;
    const uint8_t src[8] = {byteOf(a, 0), byteOf(a, 1), byteOf(a, 2),
                            byteOf(a, 3), byteOf(b, 0), byteOf(b, 1),
                            byteOf(b, 2), byteOf(b, 3)};
    const uint32_t r = bytePerm(a, b, sel);
    for (int n = 0; n < 4; ++n)
      if (byteOf(r, n) != src[(sel >> (4 * n)) & 7])
        return fail("bytePerm differs from prmt's definition");
  }
}

void checkTranspose4x4(std::mt19937 &rng) {
  for (int trial = 0; trial < 1000; ++trial) {
    uint32_t row[4], col[4];
    for (auto &w : row)
      w = rng();
    for (int swapped = 0; swapped < 2; ++swapped) {
      uint32_t in[4] = {row[0], row[1], row[2], row[3]};
      if (swapped) {
        std::swap(in[0], in[1]);
        std::swap(in[2], in[3]);
      }
      transpose4x4(in, swapped, col);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          if (byteOf(col[j], i) != byteOf(row[i], j))
            return fail(swapped ? "transpose4x4 (rows swapped) is not a "
                                  "transpose"
                                : "transpose4x4 is not a transpose");
    }
  }
}

/// A kRows x kCols tile of random bytes as the casts fill it: element
/// (r, c) = value[r * kCols + c] at swizzled(r, c); 16-byte aligned, as
/// __align__(16) makes it.
template <int kRows, int kCols> struct RandomTile {
  std::vector<uint64_t> store = std::vector<uint64_t>(kRows * kCols / 8);
  std::vector<uint8_t> value = std::vector<uint8_t>(kRows * kCols);
  explicit RandomTile(std::mt19937 &rng) {
    for (auto &v : value)
      v = static_cast<uint8_t>(rng());
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kCols; ++c)
        bytes()[swizzled<kCols>(r, c)] = value[r * kCols + c];
  }
  uint8_t *bytes() { return reinterpret_cast<uint8_t *>(store.data()); }
};

template <int kRows, int kCols> void checkTiles(std::mt19937 &rng) {
  using Q = Quads<kRows, kCols>;
  char what[160];
  const int tileBytes = kRows * kCols;
  RandomTile<kRows, kCols> t(rng);
  uint8_t *tile = t.bytes();
  const std::vector<uint8_t> &value = t.value;
  // The swizzle is a permutation of the tile's bytes.
  std::set<int> offsets;
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c)
      offsets.insert(swizzled<kCols>(r, c));
  if (static_cast<int>(offsets.size()) != tileBytes)
    return fail("swizzled() maps two elements to one byte");
  // Destination: transposed rows of ld bytes (the tile's rows plus 24 of
  // padding) and 40 bytes after them; all of it 0xA5 first.
  const int64_t ld = kRows + 24, bytes = kCols * ld + 40;
  std::vector<uint64_t> dstStore((bytes + 7) / 8);
  uint8_t *dst = reinterpret_cast<uint8_t *>(dstStore.data());
  std::memset(dst, 0xA5, dstStore.size() * 8);
  for (int id = 0; id < Q::kCount; ++id)
    storeQuad<kRows, kCols>(tile, id, dst, ld);
  for (int64_t i = 0; i < static_cast<int64_t>(dstStore.size()) * 8; ++i) {
    const int64_t c = i / ld, b = i % ld;
    const uint8_t want = c < kCols && b < kRows ? value[b * kCols + c] : 0xA5;
    if (dst[i] != want) {
      std::snprintf(what, sizeof what,
                    "%dx%d tile: destination byte %lld (transposed row %lld, "
                    "byte %lld): %d, want %d",
                    kRows, kCols, (long long)i, (long long)c, (long long)b,
                    dst[i], want);
      return fail(what);
    }
  }
  // Banks: per warp and load, the words read and the banks they fall in.
  const int allowed = kRows >= 128 ? 1 : 2;
  for (int w0 = 0; w0 < Q::kCount; w0 += 32)
    for (int i = 0; i < 8; ++i) {
      std::map<int, std::set<int>> bank;
      for (int lane = 0; lane < 32 && w0 + lane < Q::kCount; ++lane) {
        const int word = Q::loadOffset(w0 + lane, i) / 4;
        bank[word % 32].insert(word);
      }
      for (auto &[b, words] : bank)
        if (static_cast<int>(words.size()) > allowed) {
          std::snprintf(what, sizeof what,
                        "%dx%d tile: warp of quads %d.., load %d: %zu words "
                        "in bank %d (at most %d)",
                        kRows, kCols, w0, i, words.size(), b, allowed);
          return fail(what);
        }
    }
}

/// storePiece over every piece of a kRows x kCols tile of which rowsLeft
/// rows and colsLeft columns are the tensor's (a ragged edge tile), with
/// and without 16-byte stores: the transposed rows hold exactly those
/// bytes, and nothing else of the destination is written.
template <int kRows, int kCols> void checkPieces(std::mt19937 &rng) {
  char what[200];
  RandomTile<kRows, kCols> t(rng);
  const uint8_t *tile = t.bytes();
  const std::vector<uint8_t> &value = t.value;
  const int64_t ld = kRows + 32, bytes = kCols * ld + 48;
  std::vector<uint64_t> dstStore((bytes + 15) / 16 * 2);
  uint8_t *dst = reinterpret_cast<uint8_t *>(dstStore.data());
  const int64_t rowCases[] = {1,         7,    15, 16, 17, 31, kRows / 2 + 5,
                              kRows - 1, kRows};
  const int64_t colCases[] = {1, 5, kCols / 2 + 3, kCols - 1, kCols};
  for (int64_t rowsLeft : rowCases)
    for (int64_t colsLeft : colCases)
      for (int vec = 0; vec < 2; ++vec) {
        std::memset(dst, 0xA5, dstStore.size() * 8);
        for (int id = 0; id < Pieces<kRows>::kChunks * kCols; ++id)
          storePiece<kRows, kCols>(tile, id, dst, ld, rowsLeft, colsLeft,
                                   vec != 0);
        for (int64_t i = 0; i < static_cast<int64_t>(dstStore.size()) * 8;
             ++i) {
          const int64_t c = i / ld, b = i % ld;
          const bool in = c < colsLeft && b < rowsLeft;
          const uint8_t want = in ? value[b * kCols + c] : 0xA5;
          if (dst[i] != want) {
            std::snprintf(what, sizeof what,
                          "%dx%d tile, %lld rows x %lld columns left, %s: "
                          "destination byte %lld (transposed row %lld, byte "
                          "%lld): %d, want %d",
                          kRows, kCols, (long long)rowsLeft,
                          (long long)colsLeft, vec ? "16-byte stores" : "bytes",
                          (long long)i, (long long)c, (long long)b, dst[i],
                          want);
            return fail(what);
          }
        }
      }
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1) {
    std::fprintf(stderr, "usage: te-transpose-check (no arguments)\n");
    return 2;
  }
  std::mt19937 rng(2026);
  checkBytePerm(rng);
  checkTranspose4x4(rng);
  checkTiles<128, 64>(rng);
  checkTiles<64, 64>(rng);
  checkPieces<128, 64>(rng);
  checkPieces<64, 64>(rng);
  checkPieces<128, 128>(rng);
  if (failures)
    return 1;
  std::printf("te-transpose-check: bytePerm, transpose4x4, 128x64 and 64x64 "
              "tiles (bytes and banks), ragged 128x64, 64x64 and 128x128 "
              "tiles by pieces: as required\n");
  return 0;
}
