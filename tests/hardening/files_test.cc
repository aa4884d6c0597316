// Files as a careless or hostile user names them: FIFOs, directories, devices, symlinks and
// their loops, unreadable files, and writers killed mid-write.
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>

#include "graph/builder/op_builder.h"
#include "graph/builder/ops.h"
#include "graph/platform/file_io.h"
#include "kernels/data/idx_file.h"
#include "kernels/util/checkpoint_file.h"
#include "tests/hardening/hardening_util.h"

namespace tessera::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace fs = std::filesystem;

class FilesTest : public TempDirTest {};

// A RestoreTensors node reading `names` as float32 from `path`.
GraphSpec RestoreGraph(const std::string& path, const std::vector<std::string>& names, AttrMap attrs = {}) {
  Scope root = Scope::NewRootScope();
  attrs.emplace("dtypes", std::vector<DataType>(names.size(), DataType::kFloat));
  ops::Build(root.WithOpName("restore"), "RestoreTensors",
             {ops::Const(root, Tensor::Scalar(path)), ops::Const(root, Tensor::FromVector(names))}, attrs);
  GraphSpec def;
  EXPECT_TRUE(root.ToSpec(&def).ok());
  return def;
}

TEST_F(FilesTest, ReadsRefuseWhatIsNotARegularFileWithoutWaiting) {
  const std::string fifo = Path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  Status s = ReadFileToString(fifo, "graph").status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));  // no writer ever comes
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("Cannot read graph '" + fifo + "': it is a FIFO, not a regular file"));

  s = ReadFileToString(dir_.string(), "graph").status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("it is a directory"));
  s = ReadFileToString("/dev/null", "graph").status();
  EXPECT_THAT(s.message(), HasSubstr("it is a character device"));
  s = ReadFileToString(Path("missing"), "graph").status();
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(Path("missing")));
  s = ReadFileToString(Write("f", "x") + "/below", "graph").status();  // a file used as a folder
  EXPECT_EQ(s.code(), Code::kNotFound);
}

TEST_F(FilesTest, SymlinkLoopsAreNamedAsSuch) {
  fs::create_symlink(Path("b"), Path("a"));
  fs::create_symlink(Path("a"), Path("b"));
  Status s = ReadFileToString(Path("a"), "checkpoint").status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("symbolic links"));
  s = WriteFileAtomically(Path("a"), "x", "checkpoint");
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("symbolic links"));
}

TEST_F(FilesTest, PermissionErrorsArePermissionDenied) {
  EXPECT_EQ(FileError(EACCES, "read", "graph", "g.json").code(), Code::kPermissionDenied);
  EXPECT_EQ(FileError(EROFS, "write", "trace", "t.json").code(), Code::kPermissionDenied);
  EXPECT_EQ(FileError(ENOSPC, "write", "checkpoint", "c").code(), Code::kResourceExhausted);
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  const std::string secret = Write("secret", "{}");
  ASSERT_EQ(::chmod(secret.c_str(), 0), 0);
  Status s = ReadFileToString(secret, "graph").status();
  EXPECT_EQ(s.code(), Code::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr(secret));
}

TEST_F(FilesTest, ReadsStopAtTheirLimit) {
  Status s = ReadFileToString(Write("big", std::string(1000, 'x')), "graph", 999).status();
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("larger than 999 bytes"));
  StatusOr<std::string> whole = ReadFileToString(Path("big"), "graph", 1000);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->size(), 1000u);
}

TEST_F(FilesTest, WritesGoThroughSymlinksToTheirTarget) {
  fs::create_directories(Path("models"));
  const std::string target = Write("models/model.json", "old");
  fs::create_symlink("models/model.json", Path("latest"));  // relative, as people make them
  ASSERT_TRUE(WriteFileAtomically(Path("latest"), "new", "frozen graph").ok());
  EXPECT_TRUE(fs::is_symlink(Path("latest")));
  EXPECT_EQ(Read(target), "new");
  // A dangling link names the file to create.
  fs::create_symlink("models/next.json", Path("next"));
  ASSERT_TRUE(WriteFileAtomically(Path("next"), "made", "frozen graph").ok());
  EXPECT_EQ(Read(Path("models/next.json")), "made");
  EXPECT_TRUE(fs::is_symlink(Path("next")));
  // Both names of one file resolve to the same target.
  EXPECT_EQ(*ResolveWriteTarget(Path("latest"), "x"), *ResolveWriteTarget(Path("models/../models/model.json"), "x"));
}

TEST_F(FilesTest, WritesRefuseTargetsThatAreNotRegularFiles) {
  Status s = WriteFileAtomically("/dev/null", "x", "checkpoint");
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'/dev/null': it is a character device, not a regular file"));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  EXPECT_EQ(WriteFileAtomically(Path("fifo"), "x", "trace").code(), Code::kInvalidArgument);
  fs::create_directories(Path("folder"));
  s = WriteFileAtomically(Path("folder"), "x", "trace");
  EXPECT_THAT(s.message(), HasSubstr("it is a directory"));
  EXPECT_TRUE(fs::is_fifo(Path("fifo")));
  EXPECT_TRUE(fs::is_directory(Path("folder")));
  EXPECT_EQ(WriteFileAtomically(Path("no/such/folder/f"), "x", "trace").code(), Code::kNotFound);
  EXPECT_THAT(Files(), ElementsAre("fifo", "folder"));
}

TEST_F(FilesTest, AReplacedFileKeepsItsPermissions) {
  const std::string f = Write("f", "old");
  ASSERT_EQ(::chmod(f.c_str(), 0640), 0);
  ASSERT_TRUE(WriteFileAtomically(f, "new", "trace").ok());
  struct stat st;
  ASSERT_EQ(::stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

// A writer killed between its first byte and its rename leaves the old file whole and a
// temporary file that the next writer of the same target removes.
TEST_F(FilesTest, AWriterKilledMidWriteLosesNothingAndItsTemporaryFileIsCleanedUp) {
  const std::string target = Write("model.ckpt", "the good one");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    StatusOr<std::unique_ptr<AtomicFileWriter>> w = AtomicFileWriter::Open(target, "checkpoint");
    if (w.ok() && (*w)->Append(std::string(1 << 20, 'x')).ok()) ::raise(SIGKILL);
    ::_exit(1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(Read(target), "the good one");
  ASSERT_EQ(Files().size(), 2u);
  EXPECT_THAT(Files()[1], StartsWith("model.ckpt.tmp."));

  ASSERT_TRUE(WriteFileAtomically(target, "the next one", "checkpoint").ok());
  EXPECT_EQ(Read(target), "the next one");
  EXPECT_THAT(Files(), ElementsAre("model.ckpt"));
}

TEST_F(FilesTest, ALiveWritersTemporaryFileIsLeftAlone) {
  const std::string target = Path("model.ckpt");
  StatusOr<std::unique_ptr<AtomicFileWriter>> slow = AtomicFileWriter::Open(target, "checkpoint");
  ASSERT_TRUE(slow.ok());
  ASSERT_TRUE((*slow)->Append("slow").ok());
  ASSERT_TRUE(WriteFileAtomically(target, "fast", "checkpoint").ok());
  EXPECT_EQ(Read(target), "fast");
  ASSERT_TRUE((*slow)->Commit().ok());
  EXPECT_EQ(Read(target), "slow");
  EXPECT_THAT(Files(), ElementsAre("model.ckpt"));
}

TEST_F(FilesTest, AnUncommittedWriterLeavesNoTrace) {
  const std::string target = Write("f", "old");
  {
    StatusOr<std::unique_ptr<AtomicFileWriter>> w = AtomicFileWriter::Open(target, "trace");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append("half").ok());
  }
  EXPECT_EQ(Read(target), "old");
  EXPECT_THAT(Files(), ElementsAre("f"));
}

// RestoreTensors reads its file inside a step, where a FIFO would block past the deadline.
TEST_F(FilesTest, RestoringFromAFifoFailsAtOnceNamingTheNode) {
  const std::string fifo = Path("model.ckpt");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  SessionConfig config;
  config.operation_timeout_in_ms = 60000;
  auto session = Session::Create(config, RestoreGraph(fifo, {"w"}));
  ASSERT_TRUE(session.ok());
  std::vector<Tensor> out;
  const auto start = std::chrono::steady_clock::now();
  Status s = (*session)->Run({}, {"restore"}, {}, &out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("it is a FIFO"));
  EXPECT_THAT(s.message(), HasSubstr("[[node restore (RestoreTensors)"));
}

// A checkpoint may claim gigabytes for a small variable; the claim is checked against the
// variable before any data is read or allocated.
TEST_F(FilesTest, ACheckpointEntryIsCheckedBeforeItsDataIsRead) {
  const std::string path = Path("model.ckpt");
  Tensor big(DataType::kFloat, TensorShape({1 << 20}));
  std::fill(big.data<float>(), big.data<float>() + big.NumElements(), 1.0f);
  ASSERT_TRUE(WriteCheckpoint(path, {{"w", big}}).ok());
  auto session =
      Session::Create(SessionConfig(), RestoreGraph(path, {"w"}, {{"shapes", std::vector<TensorShape>{TensorShape({32})}}}));
  ASSERT_TRUE(session.ok());
  std::vector<Tensor> out;
  Status s = (*session)->Run({}, {"restore"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("has shape [1048576], expected [32]"));
  EXPECT_EQ((*session)->devices().devices()[0]->allocator()->stats().peak_bytes_in_use, 0);
}

// An uncompressed IDX file of `records` 2x2 images.
std::string IdxImages(uint32_t records, uint32_t declared) {
  std::string h = {0, 0, 8, 3};
  for (uint32_t d : {declared, 2u, 2u}) {
    for (int shift = 24; shift >= 0; shift -= 8) h += static_cast<char>((d >> shift) & 0xff);
  }
  return h + std::string(size_t{records} * 4, '\x07');
}

TEST_F(FilesTest, IdxFilesAreReadOnlyAsFarAsAsked) {
  const std::string path = Write("images.idx", IdxImages(1000, 1000));
  StatusOr<Tensor> first = ReadIdxFile(path, 10);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->shape(), TensorShape({10, 2, 2}));
  EXPECT_EQ(ReadIdxFile(path)->shape(), TensorShape({1000, 2, 2}));
}

TEST_F(FilesTest, IdxFilesThatClaimMoreThanTheyHoldOrAreNotGzipAreDataLoss) {
  // A header claiming a million records over four bytes of data: refused before reading.
  Status s = ReadIdxShape(Write("short.idx", IdxImages(1, 1'000'000))).status();
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("more than the file can hold"));
  // A gzip header, then a deflate block of the reserved type 3.
  s = ReadIdxFile(Write("corrupt.idx.gz", std::string("\x1f\x8b\x08\0\0\0\0\0\0\x03\x07", 11) + std::string(64, 'z')))
          .status();
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("is corrupt"));
  EXPECT_THAT(s.message(), HasSubstr("corrupt.idx.gz"));
  s = ReadIdxFile(dir_.string()).status();
  EXPECT_THAT(s.message(), HasSubstr("it is a directory"));
}

}  // namespace
}  // namespace tessera::testing
