/**
 * The starter's wiring: auto-configuration, the servlet filter and WebFilter, the measured Tomcat
 * executor, JFR events. Not an API; it changes without notice.
 */
package io.spillway.spring.internal;
