/**
 * Rajomon (Xing et al., "Decentralized and Coordinated Overload Control for Latency-Sensitive
 * Microservices", NSDI '25; rajomon-nsdi25): tokens and per-interface
 * prices propagated through a call graph in request and response metadata.
 *
 * <ul>
 *   <li>{@link io.spillway.price.Rajomon} is the {@link io.spillway.api.OverloadScheme}; {@link
 *       io.spillway.price.RajomonConfig} its parameters, with their sources.
 *   <li>Client side (§3.3): {@link io.spillway.price.RajomonClientGate} spends from a {@link
 *       io.spillway.price.TokenWallet} refilled as {@link io.spillway.price.TokenRefill} says.
 *   <li>Server side (§3.4): {@link io.spillway.price.RajomonServerGate} prices interfaces, admits
 *       requests whose tokens cover the price, and attaches prices to responses as {@link
 *       io.spillway.price.PriceAttachment} says.
 * </ul>
 *
 * <p>Metadata used: request {@code sessionId}, {@code tokens}, {@code interfaceId}; response
 * {@code price} ({@link io.spillway.api.ResponseMetadata#NO_PRICE} when not sent), status {@link
 * io.spillway.api.Status#REJECTED_PRICE}, and the client-filled {@code interfaceId}.
 *
 * <p>This package depends on nothing but the JDK and {@code overload-api}.
 */
package io.spillway.price;
