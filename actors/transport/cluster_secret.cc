// OpenSSL 3 still ships the EC_KEY interface this file uses to build a key from a
// given private scalar; its replacement (EVP_PKEY_fromdata) needs the public point
// encoded by hand, which is longer and no clearer.
#define OPENSSL_SUPPRESS_DEPRECATED

#include "actors/transport/cluster_secret.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace actorflow {
namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bignum = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
using EcKey = std::unique_ptr<EC_KEY, Deleter<EC_KEY, EC_KEY_free>>;
using EcPoint = std::unique_ptr<EC_POINT, Deleter<EC_POINT, EC_POINT_free>>;
using PkeyCtx = std::unique_ptr<EVP_PKEY_CTX, Deleter<EVP_PKEY_CTX, EVP_PKEY_CTX_free>>;

Status OpenSslError(const std::string& step) {
  return Internal("cluster secret: OpenSSL failed to " + step);
}

// 32 bytes of HKDF-SHA256(secret) for `label`.
StatusOr<std::string> Derive(const std::string& secret, const std::string& label) {
  PkeyCtx ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr));
  unsigned char out[32];
  size_t out_len = sizeof(out);
  const std::string salt = "actorflow cluster secret";
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) <= 0 ||
      EVP_PKEY_CTX_set_hkdf_md(ctx.get(), EVP_sha256()) <= 0 ||
      EVP_PKEY_CTX_set1_hkdf_salt(ctx.get(), reinterpret_cast<const unsigned char*>(salt.data()),
                                  static_cast<int>(salt.size())) <= 0 ||
      EVP_PKEY_CTX_set1_hkdf_key(ctx.get(), reinterpret_cast<const unsigned char*>(secret.data()),
                                 static_cast<int>(secret.size())) <= 0 ||
      EVP_PKEY_CTX_add1_hkdf_info(ctx.get(), reinterpret_cast<const unsigned char*>(label.data()),
                                  static_cast<int>(label.size())) <= 0 ||
      EVP_PKEY_derive(ctx.get(), out, &out_len) <= 0) {
    return OpenSslError("derive a key with HKDF");
  }
  return std::string(reinterpret_cast<char*>(out), out_len);
}

// The P-256 key whose private scalar is `bytes` reduced into [1, n-1].
StatusOr<Pkey> KeyFromBytes(const std::string& bytes) {
  EcKey ec(EC_KEY_new_by_curve_name(NID_X9_62_prime256v1));
  if (!ec) return OpenSslError("make a P-256 key");
  const EC_GROUP* group = EC_KEY_get0_group(ec.get());
  Bignum order(BN_new()), d(BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes.data()),
                                      static_cast<int>(bytes.size()), nullptr));
  std::unique_ptr<BN_CTX, Deleter<BN_CTX, BN_CTX_free>> bn(BN_CTX_new());
  if (!order || !d || !bn || !EC_GROUP_get_order(group, order.get(), bn.get()) ||
      !BN_sub_word(order.get(), 1) || !BN_mod(d.get(), d.get(), order.get(), bn.get()) ||
      !BN_add_word(d.get(), 1)) {
    return OpenSslError("reduce the derived scalar");
  }
  EcPoint pub(EC_POINT_new(group));
  if (!pub || !EC_POINT_mul(group, pub.get(), d.get(), nullptr, nullptr, bn.get()) ||
      !EC_KEY_set_private_key(ec.get(), d.get()) || !EC_KEY_set_public_key(ec.get(), pub.get())) {
    return OpenSslError("compute the derived public key");
  }
  Pkey key(EVP_PKEY_new());
  if (!key || !EVP_PKEY_assign_EC_KEY(key.get(), ec.release())) return OpenSslError("wrap the key");
  return key;
}

StatusOr<Pkey> FreshKey() {
  Pkey key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslError("generate a node key");
  return key;
}

Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return OpenSslError(std::string("make extension ") + value);
  const int added = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return added ? Status::OK() : OpenSslError("add an extension");
}

// A certificate for `key` named `cn`, signed by `signer` as `issuer` (null: self).
// Validity is fixed for the CA (every process builds the same name, key and dates)
// and runs from an hour ago for ten years for a node.
StatusOr<Cert> MakeCert(EVP_PKEY* key, const std::string& cn, bool is_ca, EVP_PKEY* signer,
                        X509* issuer, long serial) {
  Cert cert(X509_new());
  if (!cert) return OpenSslError("allocate a certificate");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  if (is_ca) {
    ASN1_TIME_set_string(X509_getm_notBefore(cert.get()), "20200101000000Z");
    ASN1_TIME_set_string(X509_getm_notAfter(cert.get()), "21000101000000Z");
  } else {
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 10L * 365 * 24 * 3600);
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  if (!X509_set_pubkey(cert.get(), key)) return OpenSslError("set a certificate's key");
  X509* issuer_cert = issuer ? issuer : cert.get();
  if (is_ca) {
    AF_RETURN_IF_ERROR(AddExtension(cert.get(), issuer_cert, NID_basic_constraints, "critical,CA:TRUE"));
    AF_RETURN_IF_ERROR(AddExtension(cert.get(), issuer_cert, NID_key_usage, "critical,keyCertSign,cRLSign"));
  } else {
    AF_RETURN_IF_ERROR(AddExtension(cert.get(), issuer_cert, NID_basic_constraints, "critical,CA:FALSE"));
    AF_RETURN_IF_ERROR(AddExtension(cert.get(), issuer_cert, NID_ext_key_usage, "serverAuth,clientAuth"));
  }
  if (!X509_sign(cert.get(), signer, EVP_sha256())) return OpenSslError("sign a certificate");
  return cert;
}

// Writes a PEM into an anonymous in-memory file that lives as long as this process
// (its descriptor is never closed) and returns the path through which OpenSSL opens
// it: nothing reaches a disk, and nothing is left behind however the process ends.
StatusOr<std::string> MemoryPem(const char* name, const std::function<int(FILE*)>& write) {
  const int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return Unavailable(std::string("cluster secret: cannot create the in-memory ") + name);
  FILE* f = ::fdopen(::dup(fd), "w");
  if (f == nullptr) {
    ::close(fd);
    return Unavailable(std::string("cluster secret: cannot write the in-memory ") + name);
  }
  const int ok = write(f);
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    ::close(fd);
    return Unavailable(std::string("cluster secret: cannot write the in-memory ") + name);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace

StatusOr<std::string> ReadClusterSecretFile(const std::string& path) {
  struct stat info;
  std::ifstream in(path, std::ios::binary);
  if (!in || ::stat(path.c_str(), &info) != 0) {
    return NotFound("--cluster-secret-file '" + path + "' cannot be read");
  }
  if ((info.st_mode & 077) != 0) {
    return InvalidArgument("--cluster-secret-file '" + path +
                           "' may be read by others than its owner (chmod 600 it)");
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  if (!secret.empty() && secret.back() == '\n') secret.pop_back();
  if (secret.size() < kMinClusterSecretBytes) {
    return InvalidArgument("--cluster-secret-file '" + path + "' holds " +
                           std::to_string(secret.size()) + " bytes; a cluster secret needs at least " +
                           std::to_string(kMinClusterSecretBytes));
  }
  return secret;
}

StatusOr<TlsConfig> TlsFromClusterSecret(const std::string& secret) {
  if (secret.size() < kMinClusterSecretBytes) {
    return InvalidArgument("a cluster secret needs at least " +
                           std::to_string(kMinClusterSecretBytes) + " bytes");
  }
  AF_ASSIGN_OR_RETURN(std::string ca_bytes, Derive(secret, "certificate authority key"));
  AF_ASSIGN_OR_RETURN(Pkey ca_key, KeyFromBytes(ca_bytes));
  AF_ASSIGN_OR_RETURN(Cert ca, MakeCert(ca_key.get(), "actorflow cluster CA", true, ca_key.get(),
                                        nullptr, 1));
  AF_ASSIGN_OR_RETURN(Pkey node_key, FreshKey());
  AF_ASSIGN_OR_RETURN(Cert node, MakeCert(node_key.get(), "actorflow node", false, ca_key.get(),
                                          ca.get(), static_cast<long>(std::time(nullptr))));
  TlsConfig tls;
  AF_ASSIGN_OR_RETURN(tls.ca, MemoryPem("ca.pem", [&](FILE* f) { return PEM_write_X509(f, ca.get()); }));
  AF_ASSIGN_OR_RETURN(tls.certificate, MemoryPem("node.pem", [&](FILE* f) {
    return PEM_write_X509(f, node.get());
  }));
  AF_ASSIGN_OR_RETURN(tls.key, MemoryPem("node_key.pem", [&](FILE* f) {
    return PEM_write_PrivateKey(f, node_key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  }));
  return tls;
}

}  // namespace actorflow
