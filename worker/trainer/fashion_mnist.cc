#include "worker/trainer/fashion_mnist.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/trainer/idx_reader.h"

namespace taups::trainer {

absl::StatusOr<ImageDataset> LoadIdxImageDataset(const std::string& images_path,
                                                 const std::string& labels_path,
                                                 int num_classes) {
  ASSIGN_OR_RETURN(IdxArray images, ReadIdxUbyte(images_path, 3));
  ASSIGN_OR_RETURN(IdxArray labels, ReadIdxUbyte(labels_path, 1));
  if (images.dims[0] != labels.dims[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        images_path, " holds ", images.dims[0], " images but ", labels_path,
        " holds ", labels.dims[0], " labels"));
  }
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= num_classes) {
      return absl::InvalidArgumentError(
          absl::StrCat(labels_path, ": label ", labels.data[i], " at ", i,
                       " is not below ", num_classes));
    }
  }
  ImageDataset set;
  set.num_examples = static_cast<int>(images.dims[0]);
  set.rows = static_cast<int>(images.dims[1]);
  set.cols = static_cast<int>(images.dims[2]);
  set.num_classes = num_classes;
  set.pixels.resize(images.data.size());
  for (size_t i = 0; i < images.data.size(); ++i) {
    set.pixels[i] = static_cast<float>(images.data[i]) / 255.0f;
  }
  set.labels = std::move(labels.data);
  return set;
}

PixelMoments ComputePixelMoments(const ImageDataset& set) {
  PixelMoments moments;
  if (set.pixels.empty()) return moments;
  double sum = 0.0, sum_sq = 0.0;
  for (float p : set.pixels) {
    sum += p;
    sum_sq += static_cast<double>(p) * p;
  }
  const double n = static_cast<double>(set.pixels.size());
  const double mean = sum / n;
  const double variance = std::max(0.0, sum_sq / n - mean * mean);
  moments.mean = static_cast<float>(mean);
  moments.stddev = variance > 0.0 ? static_cast<float>(std::sqrt(variance)) : 1.0f;
  return moments;
}

void StandardizePixels(const PixelMoments& moments, ImageDataset& set) {
  const float inv = 1.0f / moments.stddev;
  for (float& p : set.pixels) p = (p - moments.mean) * inv;
}

absl::StatusOr<ImageDataset> LoadFashionMnist(const std::string& dir,
                                              DatasetSplit split) {
  const char* prefix = split == DatasetSplit::kTrain ? "train" : "t10k";
  ASSIGN_OR_RETURN(
      ImageDataset set,
      LoadIdxImageDataset(absl::StrCat(dir, "/", prefix, "-images-idx3-ubyte.gz"),
                          absl::StrCat(dir, "/", prefix, "-labels-idx1-ubyte.gz"),
                          10));
  if (set.rows != 28 || set.cols != 28) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": Fashion-MNIST images are 28x28, found ", set.rows,
                     "x", set.cols));
  }
  return set;
}

}  // namespace taups::trainer
