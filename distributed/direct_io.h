// What both ends of the direct transport (direct_transport.h) share: the hello's
// constants and the socket I/O that resumes after partial reads and writes. Internal to
// the transport's two files.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::direct {

static_assert(std::endian::native == std::endian::little, "the frames are written as the machine stores them");

// The hello: u32 magic | u32 version | u32 token length | token; answered by u32 0 (admitted)
// or 1 (refused).
inline constexpr uint32_t kMagic = 0x54534854;  // "THST"
// 2: an empty key is a heartbeat, answered at once.
inline constexpr uint32_t kVersion = 2;
inline constexpr size_t kHelloFixedBytes = 12;
inline constexpr size_t kMaxTokenBytes = 4096;
// How long a client waits for the server's answer to its hello.
inline constexpr std::chrono::milliseconds kHelloTimeout{10000};
// Room for a few pieces of a ring all-reduce in flight, so the writer seldom waits.
inline constexpr int kSocketBufferBytes = 4 << 20;

template <typename T>
void Put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(value));
}
template <typename T>
T Get(std::string_view bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(value));
  return value;
}

// Writes every byte of `parts`, resuming after partial writes; false when the peer is gone.
bool WriteAll(int fd, std::vector<iovec> parts);
// Reads exactly `n` bytes; false at the end of the stream or on an error. On a socket with
// a receive timeout, `idle` is called each time it passes with nothing read.
bool ReadAll(int fd, void* to, size_t n, const std::function<void()>& idle = nullptr);
bool ReadString(int fd, size_t n, std::string* out, const std::function<void()>& idle = nullptr);

// The abstract socket address of DirectSocketName(address).
sockaddr_un SocketAddress(std::string_view address, socklen_t* length);
// Larger buffers for a Unix socket (TCP sizes its own, to the link's round trip).
void SetBuffers(int fd);
void SetReceiveTimeout(int fd, std::chrono::milliseconds timeout);
// A TCP connection's options: requests leave at once (no Nagle), and an idle connection
// whose peer machine or link is gone is found by the kernel's keepalive within half a
// minute, where otherwise it would look alive until used.
void SetTcpOptions(int fd);

}  // namespace tessera::direct
