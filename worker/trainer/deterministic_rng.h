// A small, portable pseudo-random generator for data generation, shuffling
// and parameter init in the trainers.
//
// Unlike std:: distributions (whose algorithms differ between standard
// libraries) every value here is fully specified, so a seed gives the same
// stream on every platform. Not cryptographic.
//
// Thread-compatible: one Rng per thread. MixSeed is a pure function.
#ifndef TAUPS_WORKER_TRAINER_DETERMINISTIC_RNG_H_
#define TAUPS_WORKER_TRAINER_DETERMINISTIC_RNG_H_

#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace taups::trainer {

// SplitMix64 finaliser: a bijective 64-bit mix with good avalanche.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Derives an independent seed from a base seed and a list of stream ids
// (e.g. {worker_id, epoch}).
inline uint64_t MixSeed(uint64_t seed, std::initializer_list<uint64_t> parts) {
  uint64_t h = Mix64(seed);
  for (uint64_t p : parts) h = Mix64(h ^ Mix64(p + 0x632be59bd9b4e019ULL));
  return h;
}

// SplitMix64 generator.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t NextU64() {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), 53 random bits.
  double UniformDouble() {
    return static_cast<double>(NextU64() >> 11) * (1.0 / 9007199254740992.0);
  }
  // Uniform in [-scale, scale).
  float UniformSymmetric(float scale) {
    return static_cast<float>((2.0 * UniformDouble() - 1.0) * scale);
  }
  // Uniform integer in [0, n), n > 0 (multiply-shift; bias < n / 2^64).
  uint64_t UniformInt(uint64_t n) {
    return static_cast<uint64_t>(
        (static_cast<unsigned __int128>(NextU64()) * n) >> 64);
  }
  // Standard normal (Box-Muller; uses two draws per value).
  double Normal() {
    const double u1 = 1.0 - UniformDouble();  // (0, 1]
    const double u2 = UniformDouble();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

// Fisher-Yates shuffle of [first, first + n) with `rng`.
template <typename T>
void Shuffle(T* first, uint64_t n, Rng& rng) {
  for (uint64_t i = n; i > 1; --i) {
    const uint64_t j = rng.UniformInt(i);
    T tmp = first[i - 1];
    first[i - 1] = first[j];
    first[j] = tmp;
  }
}

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_DETERMINISTIC_RNG_H_
