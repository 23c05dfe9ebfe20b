# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The keys of signed agent cards (A2A 1.0 §8.4): shared by the bridge, which signs its card,
and the client, which checks the cards it fetches.

A key file is PEM (a private or public key) or JSON: one JWK, or a JWK Set (``{"keys": [...]}``).
Supported keys and the JWS algorithm each signs with: EC P-256 (ES256), P-384 (ES384),
P-521 (ES512), RSA of 2048 bits or more (RS256, or the ``alg`` its JWK names: RS384, RS512,
PS256...), Ed25519 (EdDSA). Symmetric keys (HS256) are refused: a card's signature must be
checkable by anyone who has only the public key.

A key's ``kid`` is the one its JWK names, else its RFC 7638 thumbprint, so a PEM file and the
JWK the bridge serves for it name the same key.

Needs PyJWT and cryptography (the ``signing`` extra; the ``server`` extra has them);
nothing heavy is imported until a key is read.
"""
from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SIGNING_EXTRA = "pip install 'ovos-a2a-solver-plugin[signing]'"

#: JWS algorithms a card may be signed with: asymmetric ones only.
ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA")

#: The members of a public JWK that RFC 7638 hashes, per key type.
THUMBPRINT_MEMBERS = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}

_EC_CURVES = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
MIN_RSA_BITS = 2048


class KeyFileError(ValueError):
    """A key file that cannot be used; ``str()`` is one line naming the file and the problem."""


@dataclass(frozen=True)
class CardKey:
    """One key of a card signature: its ``kid``, JWS ``algorithm`` and public JWK; ``private``
    (PEM bytes) only for a key that signs."""

    kid: str
    algorithm: str
    public_jwk: dict = field(repr=False)
    private: bytes | None = field(default=None, repr=False)

    def verification_key(self):
        """The key as PyJWT checks a signature with it (bound to ``algorithm``)."""
        from jwt import PyJWK

        return PyJWK(self.public_jwk, self.algorithm)


def thumbprint(public_jwk: dict) -> str:
    """The RFC 7638 SHA-256 thumbprint of a JWK, base64url without padding."""
    members = THUMBPRINT_MEMBERS.get(public_jwk.get("kty", ""))
    if members is None:
        raise KeyFileError(f"no thumbprint for key type {public_jwk.get('kty')!r}")
    canonical = json.dumps({m: public_jwk[m] for m in members}, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()


def key_set(keys: list[CardKey]) -> dict:
    """The JWK Set (RFC 7517 §5) of ``keys``: public members only."""
    return {"keys": [dict(k.public_jwk) for k in keys]}


def read_signing_key(path: str | Path) -> CardKey:
    """The one private key in a PEM or JWK file, ready to sign. Raises :class:`KeyFileError`."""
    text = _read(path)
    if text.startswith("-----BEGIN"):
        serialization = _crypto("serialization")
        try:
            private = serialization.load_pem_private_key(text.encode(), password=None)
        except TypeError:
            raise KeyFileError(f"{path}: the private key is encrypted; give an unencrypted PEM key") from None
        except ValueError:
            if "PUBLIC KEY" in text.split("\n", 1)[0]:
                raise KeyFileError(f"{path} holds a public key; signing needs the private key") from None
            raise KeyFileError(f"{path}: not a readable PEM private key") from None
        return _card_key(private, path, private=True)
    document = _json(text, path)
    if "keys" in document:
        raise KeyFileError(f"{path} is a JWK Set; signing needs one private key (a PEM or JWK file)")
    _refuse_symmetric(document, path)
    if "d" not in document:
        raise KeyFileError(f"{path} holds a public JWK; signing needs the private key (with its 'd')")
    return _from_jwk(document, path, private=True)


def read_public_keys(path: str | Path) -> list[CardKey]:
    """The public keys of a PEM file (public or private key), a JWK or a JWK Set.
    Raises :class:`KeyFileError`."""
    text = _read(path)
    if text.startswith("-----BEGIN"):
        serialization = _crypto("serialization")
        try:
            key = serialization.load_pem_public_key(text.encode())
        except ValueError:
            try:
                key = serialization.load_pem_private_key(text.encode(), password=None).public_key()
            except TypeError:
                raise KeyFileError(f"{path}: the private key is encrypted; give the public key") from None
            except ValueError:
                raise KeyFileError(f"{path}: not a readable PEM key") from None
        return [_card_key(key, path, private=False)]
    return parse_key_set(text, str(path))


def parse_key_set(text: str | bytes, source: str) -> list[CardKey]:
    """The public keys of a JWK or JWK Set document (from a file or a ``jku`` URL).
    Raises :class:`KeyFileError` naming ``source``."""
    document = _json(text, source)
    entries = document.get("keys") if "keys" in document else [document]
    if not isinstance(entries, list) or not entries:
        raise KeyFileError(f"{source}: a JWK Set needs a non-empty 'keys' list")
    return [_from_jwk(entry, source, private=False) for entry in entries]


# ---- internals -------------------------------------------------------------------------

def _read(path: str | Path) -> str:
    try:
        return Path(path).expanduser().read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise KeyFileError(f"cannot read the key file {path}: {getattr(exc, 'strerror', None) or exc}") from None


def _json(text: str | bytes, source: Any) -> dict:
    try:
        document = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        raise KeyFileError(f"{source}: neither a PEM key nor a JWK (JSON)") from None
    if not isinstance(document, dict):
        raise KeyFileError(f"{source}: a JWK or JWK Set is a JSON object")
    return document


def _crypto(name: str):
    try:
        import jwt  # noqa: F401 -- the a2a-sdk's signing helpers need it too
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    except ImportError as exc:
        raise KeyFileError(f"signed agent cards need PyJWT and cryptography (missing: {exc.name}): "
                           f"{SIGNING_EXTRA}") from None
    return {"serialization": serialization, "ec": ec, "ed25519": ed25519, "rsa": rsa}[name]


def _algorithm_of(key, source: Any) -> str:
    """The JWS algorithm for a cryptography key object, or :class:`KeyFileError`."""
    ec, ed25519, rsa = _crypto("ec"), _crypto("ed25519"), _crypto("rsa")
    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)):
        algorithm = _EC_CURVES.get(key.curve.name)
        if algorithm is None:
            raise KeyFileError(f"{source}: EC curve {key.curve.name} is not supported (P-256, P-384, P-521 are)")
        return algorithm
    if isinstance(key, (rsa.RSAPrivateKey, rsa.RSAPublicKey)):
        if key.key_size < MIN_RSA_BITS:
            raise KeyFileError(f"{source}: an RSA key of {key.key_size} bits is too weak (at least {MIN_RSA_BITS})")
        return "RS256"
    if isinstance(key, (ed25519.Ed25519PrivateKey, ed25519.Ed25519PublicKey)):
        return "EdDSA"
    raise KeyFileError(f"{source}: unsupported key type {type(key).__name__} "
                       f"(EC P-256/P-384/P-521, RSA, Ed25519 are supported)")


def _public_jwk(public_key) -> dict:
    from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

    ec, ed25519 = _crypto("ec"), _crypto("ed25519")
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        return ECAlgorithm.to_jwk(public_key, as_dict=True)
    if isinstance(public_key, ed25519.Ed25519PublicKey):
        return OKPAlgorithm.to_jwk(public_key, as_dict=True)
    return RSAAlgorithm.to_jwk(public_key, as_dict=True)


def _card_key(key, source: Any, *, private: bool, kid: str | None = None, algorithm: str | None = None) -> CardKey:
    """A :class:`CardKey` for a cryptography key object (private or public)."""
    serialization = _crypto("serialization")
    algorithm = algorithm or _algorithm_of(key, source)
    public_key = key.public_key() if hasattr(key, "private_bytes") else key
    members = _public_jwk(public_key)
    public = {m: members[m] for m in THUMBPRINT_MEMBERS[members["kty"]]}
    kid = kid or thumbprint(public)
    public.update(kid=kid, alg=algorithm, use="sig")
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()) if private else None
    return CardKey(kid=kid, algorithm=algorithm, public_jwk=public, private=pem)


def _refuse_symmetric(entry: dict, source: Any) -> None:
    if entry.get("kty") == "oct":
        raise KeyFileError(f"{source}: a symmetric key (kty 'oct') cannot sign a card for others to check; "
                           f"use an EC, RSA or Ed25519 key")


def _from_jwk(entry: Any, source: Any, *, private: bool) -> CardKey:
    """A :class:`CardKey` from one JWK (a dict); its ``kid`` and ``alg`` are kept."""
    _crypto("serialization")
    from jwt import PyJWK
    from jwt.exceptions import PyJWKError, PyJWTError

    if not isinstance(entry, dict):
        raise KeyFileError(f"{source}: a JWK is a JSON object")
    _refuse_symmetric(entry, source)
    algorithm = entry.get("alg")
    if algorithm is not None and algorithm not in ALGORITHMS:
        raise KeyFileError(f"{source}: algorithm {algorithm!r} is not supported ({', '.join(ALGORITHMS)} are)")
    try:
        jwk = PyJWK(entry)
    except (PyJWKError, PyJWTError, ValueError, TypeError) as exc:
        raise KeyFileError(f"{source}: not a usable JWK: {exc}") from None
    algorithm = algorithm or jwk.algorithm_name
    if algorithm not in ALGORITHMS:
        raise KeyFileError(f"{source}: algorithm {algorithm!r} is not supported ({', '.join(ALGORITHMS)} are)")
    key = jwk.key
    is_private = hasattr(key, "private_bytes")
    if private and not is_private:
        raise KeyFileError(f"{source} holds a public JWK; signing needs the private key")
    if is_private and not private:
        key = key.public_key()
    natural = _algorithm_of(key, source)  # the same limits as a PEM key (curve, RSA size)
    if algorithm != natural and not (natural == "RS256" and algorithm[:2] in ("RS", "PS")):
        raise KeyFileError(f"{source}: algorithm {algorithm!r} does not fit this key (it signs with {natural})")
    kid = entry.get("kid")
    if kid is not None and (not isinstance(kid, str) or not kid):
        raise KeyFileError(f"{source}: a JWK's 'kid' must be a non-empty string")
    return _card_key(key, source, private=private, kid=kid, algorithm=algorithm)
