/**
 * The starter's wiring: auto-configuration, the servlet filter and WebFilter, the measured Tomcat
 * executor and Jetty thread pool, JFR events. Not an API; it changes without notice.
 */
package io.spillway.spring.internal;
