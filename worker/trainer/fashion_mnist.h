// Labelled image data sets read from IDX files, with Fashion-MNIST's layout
// (as shipped by Debian's dataset-fashion-mnist package) as the main user.
//
// Immutable after loading; safe to share between threads for reading.
#ifndef TAUPS_WORKER_TRAINER_FASHION_MNIST_H_
#define TAUPS_WORKER_TRAINER_FASHION_MNIST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace taups::trainer {

inline constexpr char kDefaultFashionMnistDir[] =
    "/usr/share/datasets/fashion-mnist";

struct ImageDataset {
  int num_examples = 0;
  int rows = 0;
  int cols = 0;
  int num_classes = 0;
  std::vector<float> pixels;    // num_examples * rows * cols, in [0, 1]
  std::vector<uint8_t> labels;  // num_examples, each < num_classes

  int feature_dim() const { return rows * cols; }
  const float* features(int i) const {
    return pixels.data() + static_cast<size_t>(i) * feature_dim();
  }
};

enum class DatasetSplit { kTrain, kTest };

// Reads an images file (rank 3: count x rows x cols) and a labels file
// (rank 1: count) and scales pixels by 1/255. INVALID_ARGUMENT when the
// counts differ or a label is >= num_classes; the reader's errors otherwise.
absl::StatusOr<ImageDataset> LoadIdxImageDataset(const std::string& images_path,
                                                 const std::string& labels_path,
                                                 int num_classes);

// Mean and standard deviation of all pixels of a data set.
struct PixelMoments {
  float mean = 0.0f;
  float stddev = 1.0f;
};

// Moments over every pixel of `set` (stddev 1 when the set is constant or
// empty, so Standardize never divides by zero).
PixelMoments ComputePixelMoments(const ImageDataset& set);

// pixel = (pixel - mean) / stddev for every pixel of `set`. Training with
// zero-mean, unit-variance inputs conditions SGD far better than [0, 1].
void StandardizePixels(const PixelMoments& moments, ImageDataset& set);

// Loads `dir`/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz and checks the
// images are 28 x 28 with 10 classes.
absl::StatusOr<ImageDataset> LoadFashionMnist(const std::string& dir,
                                              DatasetSplit split);

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_FASHION_MNIST_H_
