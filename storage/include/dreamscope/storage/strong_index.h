// Typed indices: a StrongIndex<Tag> is a uint32_t that knows what it indexes.
//
// A trace's rows (of its three event tables), tracks, processes and devices are all numbered
// by 32-bit integers. As plain aliases of uint32_t any one of them passed where another was
// meant (a GPU op's row where an annotation's was) and nothing complained. Each kind is its
// own type here: it is made from an integer only explicitly, never from another kind, and is
// never compared with another kind; it reads as its integer implicitly, so that indexing a
// column (`table.start[i]`) and arithmetic on rows stay as they were, and the result of that
// arithmetic is a plain integer again, which names nothing until made a kind explicitly.
// kNoIndex is "no row, track, process or device": it becomes any kind, and compares with it.
#pragma once

// Qt's moc, which reads this header through the GUI's, cannot parse <compare> and <concepts>.
#ifndef Q_MOC_RUN
#include <compare>
#include <concepts>
#endif
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace dreamscope {

template <class Tag>
class StrongIndex {
 public:
  using value_type = std::uint32_t;

  constexpr StrongIndex() = default;
  template <std::integral I>
  constexpr explicit StrongIndex(I v) : v_(static_cast<value_type>(v)) {}
  // Never from another kind, not even explicitly: that is the mistake these types exist for.
  template <class OtherTag>
  explicit StrongIndex(StrongIndex<OtherTag>) = delete;

  constexpr operator value_type() const { return v_; }
  constexpr value_type value() const { return v_; }

  constexpr StrongIndex& operator++() {
    ++v_;
    return *this;
  }
  constexpr StrongIndex operator++(int) {
    StrongIndex old = *this;
    ++v_;
    return old;
  }
  constexpr StrongIndex& operator--() {
    --v_;
    return *this;
  }
  constexpr StrongIndex operator--(int) {
    StrongIndex old = *this;
    --v_;
    return old;
  }

  friend constexpr bool operator==(const StrongIndex&, const StrongIndex&) = default;
  friend constexpr auto operator<=>(const StrongIndex&, const StrongIndex&) = default;

 private:
  value_type v_ = 0;
};

// Two kinds never compare, though each reads as an integer.
template <class A, class B>
  requires(!std::same_as<A, B>)
bool operator==(StrongIndex<A>, StrongIndex<B>) = delete;
template <class A, class B>
  requires(!std::same_as<A, B>)
std::strong_ordering operator<=>(StrongIndex<A>, StrongIndex<B>) = delete;

// A vector indexed by one kind: by it or by a plain number, never by another kind (a column of
// the annotations refuses a GpuOpIndex). A std::vector otherwise, which it passes for.
template <class Index, class T>
class IndexedVector : public std::vector<T> {
 public:
  using std::vector<T>::vector;
  using std::vector<T>::operator=;
  using std::vector<T>::operator[];
  template <class Tag>
    requires(!std::same_as<StrongIndex<Tag>, Index>)
  T& operator[](StrongIndex<Tag>) = delete;
  template <class Tag>
    requires(!std::same_as<StrongIndex<Tag>, Index>)
  const T& operator[](StrongIndex<Tag>) const = delete;
};

// "None": of any kind (a top-level annotation's parent, a device of no process), and, as an
// integer, the largest uint32_t.
struct NoIndex {
  static constexpr std::uint32_t value = std::numeric_limits<std::uint32_t>::max();
  constexpr operator std::uint32_t() const { return value; }
  template <class Tag>
  constexpr operator StrongIndex<Tag>() const {
    return StrongIndex<Tag>{value};
  }
};
inline constexpr NoIndex kNoIndex{};

// The kinds: a row of each event table of a Trace; a track, process and device of it.
using CudaApiIndex = StrongIndex<struct CudaApiRowTag>;
using GpuOpIndex = StrongIndex<struct GpuOpRowTag>;
using AnnotationIndex = StrongIndex<struct AnnotationRowTag>;
using TrackId = StrongIndex<struct TrackTag>;     // index into Trace::tracks()
using ProcessId = StrongIndex<struct ProcessTag>; // index into Trace::processes()
using DeviceId = StrongIndex<struct DeviceTag>;   // index into Trace::devices()

} // namespace dreamscope

template <class Tag>
struct std::hash<dreamscope::StrongIndex<Tag>> {
  std::size_t operator()(dreamscope::StrongIndex<Tag> i) const noexcept {
    return std::hash<std::uint32_t>{}(i.value());
  }
};

// The integer's limits, as the kind: without this, numeric_limits<GpuOpIndex>::max() would be 0.
template <class Tag>
class std::numeric_limits<dreamscope::StrongIndex<Tag>> : public std::numeric_limits<std::uint32_t> {
 public:
  static constexpr dreamscope::StrongIndex<Tag> min() noexcept { return dreamscope::StrongIndex<Tag>{0u}; }
  static constexpr dreamscope::StrongIndex<Tag> lowest() noexcept { return min(); }
  static constexpr dreamscope::StrongIndex<Tag> max() noexcept {
    return dreamscope::StrongIndex<Tag>{std::numeric_limits<std::uint32_t>::max()};
  }
};
