// An owned, typed allocation of one backend's memory (backend.h): what the
// model keeps its parameters, gradients and activations in. Move-only; the
// memory goes back to the backend when the buffer dies.
#pragma once

#include <cstddef>
#include <utility>

#include "backend/backend.h"

namespace avf::backend {

template <typename E>
class Buffer {
 public:
  Buffer() = default;
  // `count` zeroed elements.
  Buffer(Memory& memory, size_t count)
      : memory_(&memory), data_(count ? static_cast<E*>(memory.Allocate(count * sizeof(E))) : nullptr), size_(count) {}
  Buffer(Buffer&& other) noexcept { swap(other); }
  auto operator=(Buffer&& other) noexcept -> Buffer& {
    Buffer(std::move(other)).swap(*this);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  auto operator=(const Buffer&) -> Buffer& = delete;
  ~Buffer() {
    if (data_) memory_->Free(data_);
  }

  auto data() -> E* { return data_; }
  auto data() const -> const E* { return data_; }
  auto size() const -> size_t { return size_; }
  auto empty() const -> bool { return size_ == 0; }
  void Zero() {
    if (data_) memory_->Zero(data_, size_ * sizeof(E));
  }
  // Element access and iteration: host-visible memory only (Memory::host_visible).
  auto operator[](size_t i) -> E& { return data_[i]; }
  auto operator[](size_t i) const -> const E& { return data_[i]; }
  auto begin() -> E* { return data_; }
  auto end() -> E* { return data_ + size_; }
  auto begin() const -> const E* { return data_; }
  auto end() const -> const E* { return data_ + size_; }

  void swap(Buffer& other) noexcept {
    std::swap(memory_, other.memory_);
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }

 private:
  Memory* memory_ = nullptr;
  E* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace avf::backend
